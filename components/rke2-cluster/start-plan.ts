/**
 * What starting RKE2 on one node may do, decided from facts read on the hosts. Pure: the
 * provider gathers the facts over SSH, this module decides, rke2-start.sh carries it out.
 *
 * The rules that keep etcd data (seed 003's clean-up went the other way):
 *   - a fact that cannot be read or parsed is an error naming the host, never "not a member";
 *   - a server listed first starts a new etcd cluster only when no other configured server
 *     holds etcd data;
 *   - a joining server's data is moved aside (never deleted) only when the resource is
 *     created, the cluster's member list parsed, and it names neither the server nor its peer
 *     URL; on update such data is an error with what to do;
 *   - a server whose own etcd answers for another cluster than the first server's is an error.
 * And the rules that apply changes: a running node is restarted only when its version or its
 * config.yaml changed (the caller orders servers one at a time behind the join gate, then
 * agents); a node found running when the resource is created is only verified (adoption).
 */
import { EtcdMemberList, Membership, membershipOf, parseMemberList } from "./etcd-members";

/** What rke2-facts.sh found on a node. */
export interface NodeFacts {
  /** Release the rke2 binary reports, "none" when absent, "unknown" when unreadable. */
  readonly version: string;
  /** Whether rke2-<role>.service is installed. */
  readonly unit: boolean;
  readonly active: boolean;
  /** SHA-256 of /etc/rancher/rke2/config.yaml, "none" when absent. */
  readonly configSha256: string;
  /** Servers: whether server/db/etcd/member exists. */
  readonly etcdData: boolean;
  /** Servers: the member list read from this node's own etcd, or why it could not be read. */
  readonly ownMembers: EtcdMemberList | { readonly error: string };
}

/** Parses rke2-facts.sh output; any missing or malformed line is an error naming the host. */
export function parseNodeFacts(stdout: string, host: string, role: "server" | "agent"): NodeFacts {
  const values = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) values.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  const need = (key: string): string => {
    const value = values.get(key);
    if (value === undefined || value === "")
      throw new Error(
        `cannot read RKE2's state on ${host}: the fact "${key}" is missing from the report. ` +
          `Nothing was changed; check the host and re-run.`,
      );
    return value;
  };
  const version = need("version");
  const unit = need("unit") === "yes";
  const active = need("active") === "yes";
  const configSha256 = need("config_sha256");
  if (role === "agent")
    return { version, unit, active, configSha256, etcdData: false, ownMembers: { error: "agent" } };
  const etcdData = need("etcd_data") === "yes";
  const encoded = values.get("members");
  const ownMembers =
    encoded !== undefined
      ? parseMemberList(Buffer.from(encoded, "base64").toString("utf8"), host)
      : { error: values.get("members_error") || "etcd did not answer" };
  return { version, unit, active, configSha256, etcdData, ownMembers };
}

export function isMemberList(x: NodeFacts["ownMembers"]): x is EtcdMemberList {
  return "members" in x;
}

export interface StartContext {
  /** Names the node in messages. */
  readonly node: string;
  readonly nodeIp: string;
  readonly role: "server" | "agent";
  /** create: the resource is new in the stack; update: it existed. */
  readonly operation: "create" | "update";
  readonly desired: { readonly version: string; readonly configSha256: string };
  /**
   * On update: the version and config hash last applied or found (stack state). A state
   * written before the hash was recorded has none: the config is then not taken as changed.
   */
  readonly previous?: { readonly version: string; readonly configSha256?: string };
  readonly facts: NodeFacts;
  /** A joining server: the server it joins through and that server's member list. */
  readonly joinsThrough?: { readonly node: string; readonly members: EtcdMemberList };
  /** The server listed first: the other configured servers that hold etcd data. */
  readonly peersWithData?: readonly string[];
}

export interface StartDecision {
  readonly install: boolean;
  readonly moveStale: boolean;
  readonly action: "start" | "restart" | "verify";
  /** Why, in words, for the log. */
  readonly reasons: readonly string[];
  /** Servers: what the cluster's etcd says of this node before the step. */
  readonly membership?: Membership;
}

const DB = "/var/lib/rancher/rke2/server/db";

export function decideStart(ctx: StartContext): StartDecision {
  const { node, facts, desired } = ctx;
  const reasons: string[] = [];
  let moveStale = false;
  let membership: Membership | undefined;

  if (ctx.role === "server" && ctx.joinsThrough) {
    const through = ctx.joinsThrough;
    if (
      isMemberList(facts.ownMembers) &&
      facts.ownMembers.clusterId !== through.members.clusterId
    ) {
      throw new Error(
        `${node} is a member of etcd cluster ${facts.ownMembers.clusterId}, but ${through.node}, which it ` +
          `joins through, serves cluster ${through.members.clusterId}. Nothing was changed. Decide which ` +
          `cluster holds the data to keep and list a server of it first in rke2 nodes; never join a server ` +
          `of one cluster into another.`,
      );
    }
    membership = membershipOf(through.members, node, ctx.nodeIp);
    if (facts.etcdData && membership === "none") {
      if (ctx.operation === "update") {
        throw new Error(
          `${node} holds etcd data in ${DB}, but etcd on ${through.node} lists neither ${node} nor a ` +
            `peer URL on ${ctx.nodeIp}. Nothing was changed: etcd data is moved aside only when a ` +
            `joining server is first created. If ${node} must rejoin, stop rke2-server there, move ` +
            `${DB} aside by hand (mv ${DB} ${DB}.stale-<date>) and run pulumi up again.`,
        );
      }
      moveStale = true;
      reasons.push(
        `its etcd data belongs to no member of ${through.node}'s cluster; it is moved aside, not deleted`,
      );
    }
  } else if (ctx.role === "server" && !facts.etcdData) {
    const holders = ctx.peersWithData ?? [];
    if (holders.length > 0) {
      throw new Error(
        `${node} is listed first and holds no etcd data, so RKE2 would start a new etcd cluster on it, ` +
          `but ${holders.join(", ")} already hold${holders.length === 1 ? "s" : ""} etcd data. Nothing was ` +
          `changed. List ${holders[0]} first in rke2 nodes (the first server starts the cluster; the ` +
          `others, ${node} too when it was rebuilt, join it as members).`,
      );
    }
  }
  if (ctx.role === "server" && membership === undefined && isMemberList(facts.ownMembers))
    membership = membershipOf(facts.ownMembers, node, ctx.nodeIp);

  const install = facts.version !== desired.version || !facts.unit;
  // Adoption: a node found running when the resource is created is verified, not restarted.
  if (ctx.operation === "create" && facts.active && !moveStale) {
    if (install)
      reasons.push(
        `it runs ${facts.version}, not ${desired.version}; found running, so it is adopted as it is and ` +
          `the next pulumi up upgrades it, one server at a time`,
      );
    return { install: false, moveStale, action: "verify", reasons, membership };
  }
  if (facts.version !== desired.version)
    reasons.push(`it runs ${facts.version}, the stack asks for ${desired.version}`);
  else if (!facts.unit) reasons.push(`rke2-${ctx.role}.service is not installed`);
  const configChanged =
    ctx.operation === "update" &&
    ctx.previous?.configSha256 !== undefined &&
    ctx.previous.configSha256 !== desired.configSha256;
  if (configChanged) reasons.push("its config.yaml changed");
  let action: StartDecision["action"] = "start";
  if (facts.active && !moveStale) action = install || configChanged ? "restart" : "verify";
  if (!facts.active) reasons.push(`rke2-${ctx.role}.service is not running`);
  return { install, moveStale, action, reasons, membership };
}
