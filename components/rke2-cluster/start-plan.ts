/**
 * What starting RKE2 on one node may do, decided from facts read on the hosts. Pure: the
 * provider gathers the facts over SSH, this module decides, rke2-start.sh carries it out.
 *
 * The rules that keep etcd data (seed 003's clean-up went the other way):
 *   - a fact that cannot be read or parsed is an error naming the host, never "not a member";
 *   - a server listed first starts a new etcd cluster only when no other configured server
 *     holds etcd data;
 *   - a joining server is a member when any of the strongest facts says so: its own etcd
 *     answers as a member of the first server's cluster, its on-disk member name is listed, a
 *     listed peer URL is on one of its addresses, or a listed name is its node name's;
 *   - its data is moved aside (never deleted) only when the resource is created, the cluster's
 *     member list parsed, none of those facts holds, its on-disk member name was read, and its
 *     own etcd is not serving; anything else undecidable is an error naming the host;
 *   - a server whose own etcd answers for another cluster than the first server's is an error,
 *     and so is a first server that serves another cluster than the one state recorded.
 * The rules that keep names and releases: a node that already runs RKE2 under another node name
 * than the stack's is an error (a rename registers a new Node and etcd member); a downgrade or
 * a step of more than one minor release is an error.
 * And the rules that apply changes: a running node is restarted only when its version or the
 * managed keys of its config.yaml changed, or a restart an earlier step owed is still pending
 * (the caller orders servers one at a time behind the join gate, then agents); a node found
 * running when the resource is created is only verified (adoption), what it lacks is reported
 * and applied by the next pulumi up.
 */
import { EtcdMemberList, Membership, findMember, parseMemberList } from "./etcd-members";
import type { ConfigPlan, TokenFileFact } from "./config-adoption";
import type { ConfigFileText, EnvironmentFile } from "./effective-config";
import { parseEnvironmentFile } from "./effective-config";
import { releaseStepProblem } from "./releases";

/** What rke2-facts.sh found on a node. */
export interface NodeFacts {
  /** Release the rke2 binary reports, "none" when absent, "unknown" when unreadable. */
  readonly version: string;
  /** Whether rke2-<role>.service is installed. */
  readonly unit: boolean;
  readonly active: boolean;
  /** SHA-256 of /etc/rancher/rke2/config.yaml, "none" when absent. */
  readonly configSha256: string;
  /** The file itself, undefined when absent. It holds the token: never log it. */
  readonly configText?: string;
  /** The drop-ins of config.yaml.d RKE2 reads, in its order. They may hold the token. */
  readonly dropIns: readonly ConfigFileText[];
  /** The RKE2_* variables of the unit's environment files. They may hold the token. */
  readonly environment: readonly EnvironmentFile[];
  /** The files token-file settings name, as read. */
  readonly tokenFiles: readonly TokenFileFact[];
  /** RKE2's data-dir as the script found it (rechecked against the merged files). */
  readonly dataDir: string;
  /** registries.yaml as the script found it: its path (rechecked against the merged files),
   * SHA-256 ("none" when absent) and text, which may hold credentials: never log it. Undefined
   * in a report without these lines or, for the file, when it could not be read. */
  readonly registries?: {
    readonly path: string;
    readonly sha256?: string;
    readonly text?: string;
  };
  /** Release artifacts staged for an install that has not happened yet: SHA-256 by file name. */
  readonly stagedArtifacts?: Readonly<Record<string, string>>;
  /** Whether the other role's unit is installed, and whether it runs. */
  readonly otherUnit: boolean;
  readonly otherActive: boolean;
  /** `uname -n`. */
  readonly hostName: string;
  /** Every address of the host. */
  readonly addresses: readonly string[];
  /** Why a restart an earlier step owes is still pending; undefined when none is. */
  readonly restartPending?: string;
  /** Servers: whether <data-dir>/server/db/etcd/member exists. */
  readonly etcdData: boolean;
  /** Servers: <data-dir>/server/db/etcd/name, or why it could not be read. */
  readonly etcdName: string | { readonly error: string };
  /** Servers: SHA-256 of <data-dir>/server/token and of its password part, when it exists. */
  readonly serverToken?: { readonly sha256: string; readonly passwordSha256: string };
  /** Servers: the member list read from this node's own etcd, or why it could not be read. */
  readonly ownMembers: EtcdMemberList | { readonly error: string };
}

/** Parses rke2-facts.sh output; any missing or malformed line is an error naming the host. */
export function parseNodeFacts(stdout: string, host: string, role: "server" | "agent"): NodeFacts {
  const values = new Map<string, string>();
  const repeated = new Map<string, string[]>();
  for (const line of stdout.split("\n")) {
    const at = line.indexOf("=");
    if (at <= 0) continue;
    const key = line.slice(0, at);
    values.set(key, line.slice(at + 1).trim());
    repeated.set(key, [...(repeated.get(key) ?? []), line.slice(at + 1).trim()]);
  }
  const b64 = (text: string | undefined) => Buffer.from(text ?? "", "base64").toString("utf8");
  const unreadable = repeated.get("config_dropin_error") ?? [];
  if (unreadable.length > 0)
    throw new Error(
      `cannot read ${b64(unreadable[0])} on ${host}: RKE2 reads it, so no decision can be made ` +
        `without it. Nothing was changed; make it readable by root and re-run.`,
    );
  const dropIns = (repeated.get("config_dropin") ?? []).map((v) => {
    const [path, text] = v.split(" ");
    return { path: b64(path), text: b64(text) };
  });
  const environment = (repeated.get("env_file") ?? []).map((v) => {
    const [path, text] = v.split(" ");
    return { path: b64(path), variables: parseEnvironmentFile(b64(text)) };
  });
  const tokenFiles: TokenFileFact[] = [
    ...(repeated.get("token_file") ?? []).map((v) => {
      const [path, sha256, passwordSha256] = v.split(" ");
      return { path: b64(path), sha256, passwordSha256 };
    }),
    ...(repeated.get("token_file_error") ?? []).map((v) => {
      const [path, error] = v.split(" ");
      return { path: b64(path), error };
    }),
  ];
  const need = (key: string): string => {
    const value = values.get(key);
    if (value === undefined || value === "")
      throw new Error(
        `cannot read RKE2's state on ${host}: the fact "${key}" is missing from the report. ` +
          `Nothing was changed; check the host and re-run.`,
      );
    return value;
  };
  const decoded = (key: string) => {
    const value = values.get(key);
    return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
  };
  const pending = need("restart_pending");
  const common = {
    version: need("version"),
    unit: need("unit") === "yes",
    active: need("active") === "yes",
    configSha256: need("config_sha256"),
    configText: decoded("config_b64"),
    dropIns,
    environment,
    tokenFiles,
    dataDir: need("data_dir"),
    stagedArtifacts: Object.fromEntries(
      (repeated.get("staged_artifact") ?? []).map((v) => {
        const at = v.indexOf(" ");
        return [v.slice(at + 1), v.slice(0, at)];
      }),
    ),
    otherUnit: values.get("other_unit") === "yes",
    otherActive: values.get("other_active") === "yes",
    hostName: need("host_name"),
    addresses: (values.get("addresses") ?? "").split(/\s+/).filter(Boolean),
    restartPending: pending === "none" ? undefined : pending,
    registries: registriesFacts(values, host),
  };
  if (common.configSha256 !== "none" && common.configText === undefined)
    throw new Error(
      `cannot read RKE2's state on ${host}: config.yaml exists but its text is missing from the report. ` +
        `Nothing was changed; check the host and re-run.`,
    );
  if (role === "agent")
    return {
      ...common,
      // A server's etcd data on a host declared an agent: it was (or is) a server.
      etcdData: values.get("etcd_data") === "yes",
      etcdName: { error: "agent" },
      ownMembers: { error: "agent" },
    };
  const etcdName = decoded("etcd_name");
  const tokenSha = values.get("server_token_sha256");
  const encoded = decoded("members");
  return {
    ...common,
    etcdData: need("etcd_data") === "yes",
    etcdName:
      etcdName !== undefined && etcdName.trim() !== ""
        ? etcdName.trim()
        : { error: values.get("etcd_name_error") || "empty" },
    serverToken: tokenSha
      ? { sha256: tokenSha, passwordSha256: need("server_token_password_sha256") }
      : undefined,
    ownMembers:
      encoded !== undefined
        ? parseMemberList(encoded, host)
        : { error: values.get("members_error") || "etcd did not answer" },
  };
}

function registriesFacts(
  values: ReadonlyMap<string, string>,
  host: string,
): NodeFacts["registries"] {
  const path = values.get("registries_path");
  if (path === undefined) return undefined;
  const sha256 = values.get("registries_sha256");
  const encoded = values.get("registries_b64");
  if (sha256 !== undefined && sha256 !== "none" && encoded === undefined)
    throw new Error(
      `cannot read RKE2's state on ${host}: ${path} exists but its text is missing from the report. ` +
        `Nothing was changed; check the host and re-run.`,
    );
  return {
    path,
    sha256,
    text: encoded === undefined ? undefined : Buffer.from(encoded, "base64").toString("utf8"),
  };
}

export function isMemberList(x: NodeFacts["ownMembers"]): x is EtcdMemberList {
  return "members" in x;
}

/**
 * Whether RKE2 may have registered the node under a name already: it runs, holds etcd data, or
 * has a config.yaml it would start with. (A binary or unit installed alone has named nothing.)
 */
export function hasRke2Footprint(facts: NodeFacts): boolean {
  return (
    facts.active || facts.etcdData || facts.configText !== undefined || facts.dropIns.length > 0
  );
}

export interface StartContext {
  /** The node's name in the stack; names the node in messages. */
  readonly node: string;
  readonly nodeIp: string;
  readonly role: "server" | "agent";
  /** create: the resource is new in the stack; update: it existed. */
  readonly operation: "create" | "update";
  readonly desired: { readonly version: string };
  /** What config.yaml must become (planConfig). */
  readonly config: Pick<ConfigPlan, "changedKeys" | "hostNodeName" | "dataDir">;
  /** The registries.yaml entries the stack manages that change (planRegistries); none when unmanaged. */
  readonly registriesChanged?: readonly string[];
  readonly facts: NodeFacts;
  /** A joining server: the server it joins through and that server's member list. */
  readonly joinsThrough?: { readonly node: string; readonly members: EtcdMemberList };
  /** The server listed first: the other configured servers that hold etcd data. */
  readonly peersWithData?: readonly string[];
  /** Servers: the management cluster's etcd cluster ID as state recorded it when first seen. */
  readonly recordedClusterId?: string;
}

export interface StartDecision {
  readonly install: boolean;
  readonly moveStale: boolean;
  /** Whether the step writes config.yaml (the planned text). */
  readonly writeConfig: boolean;
  /** Whether the step writes registries.yaml (the planned text). */
  readonly writeRegistries: boolean;
  readonly action: "start" | "restart" | "verify";
  /** Why, in words, for the log. */
  readonly reasons: readonly string[];
  /** Servers: what the cluster's etcd says of this node before the step. */
  readonly membership?: Membership;
  /** Servers: the etcd cluster it belongs to, to record in state. */
  readonly etcdClusterId?: string;
}

/** Refusals that hold before anything else: the node's name and the release path. */
function checkNameAndRelease(ctx: StartContext): void {
  const { node, facts, config } = ctx;
  const other = ctx.role === "server" ? "agent" : "server";
  if (facts.otherActive || (ctx.role === "agent" && facts.etcdData)) {
    throw new Error(
      `${node}: the stack declares it ${ctx.role === "server" ? "a server" : "an agent"}, but ` +
        (facts.otherActive
          ? `rke2-${other}.service runs there`
          : `it holds a server's etcd data in ${config.dataDir}/server/db`) +
        `. Nothing was changed. Give the node the role it has (roles: [${other}${other === "server" ? ", ..." : ""}]); ` +
        `changing a node's role means removing it from the cluster first (rke2-killall.sh, rke2-uninstall.sh) ` +
        `and is not done by pulumi up.`,
    );
  }
  if (hasRke2Footprint(facts) && config.hostNodeName !== node) {
    throw new Error(
      `${node}: RKE2 on this host uses the node name ${config.hostNodeName} (its config.yaml's ` +
        `node-name, else its host name ${facts.hostName}), not the stack's ${node}. Nothing was ` +
        `changed. Set the node's name in the stack to ${config.hostNodeName}: renaming a node ` +
        `through config.yaml registers a new Node and a new etcd member, and the join gate ` +
        `would wait for a Node that never comes.`,
    );
  }
  const release = releaseStepProblem(facts.version, ctx.desired.version);
  if (release) throw new Error(`${node}: ${release}. Nothing was changed.`);
}

function rebuiltFirstServer(ctx: StartContext, through: string, clusterId: string): Error {
  return new Error(
    `${through} now serves etcd cluster ${clusterId}, but state recorded the management cluster as ` +
      `${ctx.recordedClusterId} when it was first seen: the first server was rebuilt into a new ` +
      `cluster. Nothing was changed on ${ctx.node}. Decide which cluster holds the data to keep ` +
      `(restore the first server from a snapshot, or list a server of the old cluster first) ` +
      `before running pulumi up again.`,
  );
}

export function decideStart(ctx: StartContext): StartDecision {
  const { node, facts, desired, config } = ctx;
  checkNameAndRelease(ctx);
  const reasons: string[] = [];
  const own = facts.ownMembers;
  const dataPath = `${config.dataDir}/server/db`;
  let moveStale = false;
  let membership: Membership | undefined;
  let etcdClusterId: string | undefined;

  if (ctx.role === "server" && ctx.joinsThrough) {
    const through = ctx.joinsThrough;
    etcdClusterId = through.members.clusterId;
    if (ctx.recordedClusterId !== undefined && etcdClusterId !== ctx.recordedClusterId)
      throw rebuiltFirstServer(ctx, through.node, etcdClusterId);
    if (isMemberList(own) && own.clusterId !== through.members.clusterId) {
      throw new Error(
        `${node} is a member of etcd cluster ${own.clusterId}, but ${through.node}, which it ` +
          `joins through, serves cluster ${through.members.clusterId}. Nothing was changed. Decide which ` +
          `cluster holds the data to keep and list a server of it first in rke2 nodes; never join a server ` +
          `of one cluster into another.`,
      );
    }
    const onDiskName = typeof facts.etcdName === "string" ? facts.etcdName : undefined;
    const addresses = [...new Set([ctx.nodeIp, ...facts.addresses])];
    const nodeNames = [...new Set([node, config.hostNodeName])];
    const match = findMember(through.members, {
      ownMemberId: isMemberList(own) ? own.readFrom : undefined,
      onDiskName,
      addresses,
      nodeNames,
    });
    membership = match ? (match.member.isLearner ? "learner" : "voter") : "none";
    if (match) reasons.push(`etcd on ${through.node} lists it (by its ${match.by})`);
    if (facts.etcdData && !match) {
      const found =
        `${through.node}'s member list names none of its member name ` +
        `(${onDiskName ?? "on-disk name " + (facts.etcdName as { error: string }).error}), node names ` +
        `(${nodeNames.join(", ")}) or addresses (${addresses.join(", ")})`;
      if (isMemberList(own))
        throw new Error(
          `${node} holds etcd data in ${dataPath} and its own etcd answers as member ${own.readFrom} of ` +
            `cluster ${own.clusterId}, yet ${found}. Nothing was changed: a server whose etcd runs is never ` +
            `stopped to move its data. Compare etcdctl member list on both servers.`,
        );
      if (onDiskName === undefined)
        throw new Error(
          `${node} holds etcd data in ${dataPath}, but its member name file (${dataPath}/etcd/name) is ` +
            `${(facts.etcdName as { error: string }).error}, so it cannot be shown never to have joined; ` +
            `${found}. Nothing was changed. Check the data by hand; to rejoin, stop rke2-server there, move ` +
            `${dataPath} aside (mv ${dataPath} ${dataPath}.stale-<date>) and run pulumi up again.`,
        );
      if (ctx.operation === "update") {
        throw new Error(
          `${node} holds etcd data in ${dataPath}, but ${found}. Nothing was changed: etcd data is moved ` +
            `aside only when a joining server is first created. If ${node} must rejoin, stop rke2-server ` +
            `there, move ${dataPath} aside by hand (mv ${dataPath} ${dataPath}.stale-<date>) and run pulumi up again.`,
        );
      }
      moveStale = true;
      reasons.push(
        `its etcd data (member ${onDiskName}) belongs to no member of ${through.node}'s cluster; it is moved aside, not deleted`,
      );
    }
  } else if (ctx.role === "server") {
    if (isMemberList(own)) {
      etcdClusterId = own.clusterId;
      if (ctx.recordedClusterId !== undefined && own.clusterId !== ctx.recordedClusterId)
        throw rebuiltFirstServer(ctx, node, own.clusterId);
      const me = own.members.find((m) => m.id === own.readFrom);
      membership = me?.isLearner ? "learner" : "voter";
    }
    const holders = ctx.peersWithData ?? [];
    if (!facts.etcdData && holders.length > 0) {
      throw new Error(
        `${node} is listed first and holds no etcd data, so RKE2 would start a new etcd cluster on it, ` +
          `but ${holders.join(", ")} already hold${holders.length === 1 ? "s" : ""} etcd data. Nothing was ` +
          `changed. List ${holders[0]} first in rke2 nodes (the first server starts the cluster; the ` +
          `others, ${node} too when it was rebuilt, join it as members).`,
      );
    }
  }

  const install = facts.version !== desired.version || !facts.unit;
  const registriesChanged = ctx.registriesChanged ?? [];
  const configChanged = config.changedKeys.length > 0 || registriesChanged.length > 0;
  const changedFiles = [
    ...(config.changedKeys.length > 0 ? [["config.yaml", config.changedKeys] as const] : []),
    ...(registriesChanged.length > 0 ? [["registries.yaml", registriesChanged] as const] : []),
  ];
  // Adoption: a node found running when the resource is created is verified, not restarted;
  // what differs stays visible (state holds the host's values) and the next up applies it. A
  // server found stopped with etcd data is adopted the same way: started as it is, its files
  // untouched, so a change never reaches a member before it has been verified.
  const stoppedMember = ctx.role === "server" && facts.etcdData && !facts.active;
  if (ctx.operation === "create" && (facts.active || stoppedMember) && !moveStale) {
    if (install)
      reasons.push(
        `it runs ${facts.version}, not ${desired.version}; found running, so it is adopted as it is and ` +
          `the next pulumi up upgrades it, one server at a time`,
      );
    for (const [file, changed] of changedFiles)
      reasons.push(
        `its ${file} differs from the stack in ${changed.join(", ")}; found running, so the ` +
          `file is kept as it is and the next pulumi up writes those keys and restarts it, one server at a time`,
      );
    if (facts.restartPending)
      reasons.push(
        `a restart is pending (${facts.restartPending}); the next pulumi up restarts it`,
      );
    if (!facts.active)
      reasons.push(
        `rke2-${ctx.role}.service is not running; it holds etcd data, so it is started as it is`,
      );
    return {
      install: false,
      moveStale,
      writeConfig: false,
      writeRegistries: false,
      action: facts.active ? "verify" : "start",
      reasons,
      membership,
      etcdClusterId,
    };
  }
  if (facts.version !== desired.version)
    reasons.push(`it runs ${facts.version}, the stack asks for ${desired.version}`);
  else if (!facts.unit) reasons.push(`rke2-${ctx.role}.service is not installed`);
  for (const [file, changed] of changedFiles)
    reasons.push(`its ${file} changes in ${changed.join(", ")}`);
  if (facts.restartPending) reasons.push(`a restart is pending (${facts.restartPending})`);
  let action: StartDecision["action"] = "start";
  if (facts.active && !moveStale)
    action = install || configChanged || facts.restartPending ? "restart" : "verify";
  if (!facts.active) reasons.push(`rke2-${ctx.role}.service is not running`);
  return {
    install,
    moveStale,
    writeConfig: config.changedKeys.length > 0,
    writeRegistries: registriesChanged.length > 0,
    action,
    reasons,
    membership,
    etcdClusterId,
  };
}
