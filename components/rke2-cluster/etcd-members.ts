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

/** Whether a peer URL points at `ip` on etcd's peer port. */
function peerUrlOn(url: string, ip: string): boolean {
  try {
    const u = new URL(url);
    return u.hostname === ip && (u.port === "2380" || u.port === "");
  } catch {
    return false;
  }
}

/**
 * The member that is this node: RKE2 names members `<node-name>-<8 hex>` (k3s-io/k3s
 * pkg/etcd/etcd.go, setName, as vendored by rancher/rke2@v1.35.6+rke2r1), and a learner that
 * has not started has no name yet, so the peer URL on the node's address also identifies it.
 */
export function memberOf(
  list: EtcdMemberList,
  nodeName: string,
  nodeIp: string,
): EtcdMember | undefined {
  const named = new RegExp(`^${nodeName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-[0-9a-f]{8}$`);
  return list.members.find(
    (m) =>
      m.name === nodeName || named.test(m.name) || m.peerUrls.some((u) => peerUrlOn(u, nodeIp)),
  );
}

/** What a parsed member list says of a node. */
export function membershipOf(list: EtcdMemberList, nodeName: string, nodeIp: string): Membership {
  const member = memberOf(list, nodeName, nodeIp);
  if (!member) return "none";
  return member.isLearner ? "learner" : "voter";
}
