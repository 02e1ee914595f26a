/**
 * Reading etcd's member list, failing closed. Whatever decides about a server's etcd data
 * (bootstrap, join, moving stale data aside) starts from this parse: an output that does not
 * parse, or that does not contain the member it was read from, is an error naming the host,
 * never "not a member".
 *
 * Input is `etcdctl member list -w json`: IDs are bare decimal uint64, beyond JavaScript's exact
 * integers, so they are read as text and reported in hex as the table output and etcd's logs
 * show them. (`--hex` is not used: some etcdctl releases print its raft_term as unquoted hex,
 * which is not JSON; etcd-io/etcd etcdctl/ctlv3/command/printer_json.go.)
 */
import { urlHost } from "../model";

/** One member of an etcd cluster. */
export interface EtcdMember {
  /** Hex member ID. */
  readonly id: string;
  /** "" for a learner that has not started yet. */
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
  readonly isLearner: boolean;
}

export interface EtcdMemberList {
  /** Hex cluster ID: two lists with different IDs come from different clusters. */
  readonly clusterId: string;
  /** Hex ID of the member that answered. */
  readonly readFrom: string;
  readonly members: readonly EtcdMember[];
}

export type Membership = "voter" | "learner" | "none";

/** A decimal uint64 etcd ID as lower-case hex, as `member list` prints it in its table. */
function hexId(raw: unknown, what: string): string {
  const text = String(raw ?? "");
  if (/^[0-9]{1,20}$/.test(text)) return BigInt(text).toString(16);
  throw new Error(`${what} "${text}" is not an etcd ID`);
}

function stringList(raw: unknown, what: string): string[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || raw.some((u) => typeof u !== "string"))
    throw new Error(`${what} is not a list of URLs`);
  return raw as string[];
}

/** Shortens a host's output for an error message. */
function excerpt(output: string): string {
  const text = output.trim();
  if (text === "") return "(empty output)";
  return text.length > 400 ? `${text.slice(0, 400)}...` : text;
}

/**
 * Parses `etcdctl member list -w json [--hex]` as read on `host`. Throws, naming the host and
 * showing the output, when it is not such a list or does not contain the member that answered.
 */
export function parseMemberList(output: string, host: string): EtcdMemberList {
  const fail = (why: string): never => {
    throw new Error(
      `cannot read etcd's member list on ${host}: ${why}. Output: ${excerpt(output)}. ` +
        `Nothing was changed; check etcd on ${host} (etcdctl member list -w json) and re-run.`,
    );
  };
  // Quote bare integer IDs so that JSON.parse keeps every digit.
  const quoted = output.replace(/"(ID|cluster_id|member_id)":\s*([0-9]+)/g, '"$1":"$2"');
  let doc: unknown;
  try {
    doc = JSON.parse(quoted);
  } catch {
    return fail("the output is not JSON");
  }
  if (typeof doc !== "object" || doc === null) return fail("the output is not a member list");
  const { header, members } = doc as { header?: Record<string, unknown>; members?: unknown };
  if (!header || !Array.isArray(members) || members.length === 0)
    return fail("the output has no header or no members");
  try {
    const list: EtcdMemberList = {
      clusterId: hexId(header.cluster_id, "cluster_id"),
      readFrom: hexId(header.member_id, "member_id"),
      members: members.map((m: Record<string, unknown>, i) => ({
        id: hexId(m.ID, `members[${i}].ID`),
        name: typeof m.name === "string" ? m.name : "",
        peerUrls: stringList(m.peerURLs, `members[${i}].peerURLs`),
        clientUrls: stringList(m.clientURLs, `members[${i}].clientURLs`),
        // etcd omits isLearner unless it is true.
        isLearner: m.isLearner === true,
      })),
    };
    if (!list.members.some((m) => m.id === list.readFrom))
      return fail(`the member that answered (${list.readFrom}) is not in its own list`);
    return list;
  } catch (err) {
    return fail((err as Error).message);
  }
}

/**
 * What identifies a server in an etcd member list, from the strongest fact to the weakest.
 * RKE2 names a member `<node-name>-<8 hex>` once and keeps the name in
 * `<data-dir>/server/db/etcd/name`; node-name is the config's `node-name`, else the host name
 * lowercased (k3s-io/k3s pkg/etcd/etcd.go setName and nameFile; pkg/util/net.go
 * GetHostnameAndIPs; the k3s release-1.35 commit rancher/rke2@v1.35.7+rke2r1 go.mod pins,
 * v1.35.7-0.20260720191031-7464a828f03e). A learner that has not started yet has no name, and
 * its peer URL may sit on any address of the host, not only the one the stack names.
 */
export interface ServerIdentity {
  /** The member ID the server's own etcd answered as, when it answered for this cluster. */
  readonly ownMemberId?: string;
  /** server/db/etcd/name as read on the host. */
  readonly onDiskName?: string;
  /** Every address of the host. */
  readonly addresses: readonly string[];
  /** Node names it may have registered under: the host's own and the stack's. */
  readonly nodeNames: readonly string[];
}

/** The member that is this server, and the fact that proved it. */
export interface MemberMatch {
  readonly member: EtcdMember;
  readonly by: "own member ID" | "on-disk member name" | "peer URL" | "node name";
}

export function findMember(list: EtcdMemberList, who: ServerIdentity): MemberMatch | undefined {
  const first = (
    by: MemberMatch["by"],
    test: (m: EtcdMember) => boolean,
  ): MemberMatch | undefined => {
    const member = list.members.find(test);
    return member && { member, by };
  };
  const escape = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const named = who.nodeNames.map((n) => new RegExp(`^${escape(n)}-[0-9a-f]{8}$`));
  return (
    (who.ownMemberId !== undefined
      ? first("own member ID", (m) => m.id === who.ownMemberId)
      : undefined) ??
    (who.onDiskName ? first("on-disk member name", (m) => m.name === who.onDiskName) : undefined) ??
    first("peer URL", (m) =>
      m.peerUrls.some((u) => {
        const host = urlHost(u);
        return host !== undefined && who.addresses.includes(host);
      }),
    ) ??
    first("node name", (m) => who.nodeNames.includes(m.name) || named.some((re) => re.test(m.name)))
  );
}

/** What a parsed member list says of a server. */
export function membershipOfServer(list: EtcdMemberList, who: ServerIdentity): Membership {
  const found = findMember(list, who);
  if (!found) return "none";
  return found.member.isLearner ? "learner" : "voter";
}

/** What a parsed member list says of a node known only by its stack name and address. */
export function membershipOf(list: EtcdMemberList, nodeName: string, nodeIp: string): Membership {
  return membershipOfServer(list, { addresses: [nodeIp], nodeNames: [nodeName] });
}
