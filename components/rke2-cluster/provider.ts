/**
 * Dynamic providers for the ordered, one-shot steps of an RKE2 cluster: starting RKE2 on a node
 * and the join gate. Both run one script over SSH; neither undoes anything on delete (RKE2 is
 * never uninstalled and etcd never wiped by Pulumi). `read` reports inputs unchanged: these are
 * actions, and drift on the node itself is node preparation's business.
 */
import * as pulumi from "@pulumi/pulumi";
import * as ssh from "../ssh/run-script";

export type Connection = ssh.PinnedTarget;

export type Membership = "first" | "voter" | "learner" | "none";

/**
 * What etcd's `member list` says of a node: voter, learner, or none. RKE2 names members
 * `<node-name>-<hex>`, and an unstarted learner has no name yet, so a member is also found by
 * its peer URL on the node's address.
 */
export function membershipOf(
  memberList: string,
  nodeName: string,
  nodeIp: string,
): Exclude<Membership, "first"> {
  for (const line of memberList.split("\n")) {
    const fields = line.split(",").map((f) => f.trim());
    if (fields.length < 6) continue;
    const [, , name, peers] = fields;
    const named = name === nodeName || name.startsWith(`${nodeName}-`);
    const byPeer = peers
      .split(/\s+/)
      .some((u) => u.replace(/^https?:\/\//, "") === `${nodeIp}:2380`);
    if (named || byPeer) return fields[5] === "true" ? "learner" : "voter";
  }
  return "none";
}

export interface NodeStartState {
  readonly node: string;
  /** The node's address, as etcd's peer URL carries it. */
  readonly nodeIp: string;
  readonly role: "server" | "agent";
  readonly connection: Connection;
  readonly sshPrivateKey: string;
  readonly script: string;
  readonly version: string;
  readonly installCommand: string;
  /** For a joining server: the first server, whose etcd says whether this one is a member. */
  readonly firstServer?: Connection;
  readonly membersScript: string;
  readonly lastChanges?: readonly string[];
}

function run(
  state: { node: string; sshPrivateKey: string },
  target: Connection,
  script: string,
  params: Record<string, string>,
  timeoutMs: number,
) {
  return ssh.runHostScript(target, state.sshPrivateKey, script, {
    label: `node ${state.node}`,
    params,
    timeoutMs,
    log: (line) => pulumi.log.info(line),
  });
}

async function startNode(state: NodeStartState): Promise<NodeStartState> {
  let membership: Membership = "first";
  if (state.role === "server" && state.firstServer) {
    const list = await run(state, state.firstServer, state.membersScript, {}, 60000);
    membership = membershipOf(list.stdout, state.node, state.nodeIp);
  }
  const result = await run(
    state,
    state.connection,
    state.script,
    {
      ROLE: state.role,
      VERSION: state.version,
      INSTALL_COMMAND: state.installCommand,
      MEMBERSHIP: membership,
    },
    900000,
  );
  return { ...state, lastChanges: ssh.changedLines(result) };
}

export const nodeStartProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: NodeStartState, news: NodeStartState) {
    const keys = ["version", "installCommand", "script", "role", "sshPrivateKey"] as const;
    return {
      changes: ssh.inputsDiffer(olds, news, [
        ...keys,
        "membersScript",
        "nodeIp",
        "connection",
        "firstServer",
      ]),
    };
  },
  async create(inputs: NodeStartState) {
    return { id: `${inputs.node}/rke2-${inputs.role}`, outs: await startNode(inputs) };
  },
  async read(id: string, props: NodeStartState) {
    return { id, props };
  },
  async update(_id: string, _olds: NodeStartState, news: NodeStartState) {
    return { outs: await startNode(news) };
  },
  // RKE2 stays installed and etcd keeps its data: deleting this resource changes nothing.
  async delete() {},
};

export interface JoinGateState {
  readonly node: string;
  readonly connection: Connection;
  readonly sshPrivateKey: string;
  readonly script: string;
  readonly membersScript: string;
  readonly timeoutSeconds: number;
  readonly pollSeconds: number;
}

async function gate(state: JoinGateState): Promise<void> {
  await run(
    state,
    state.connection,
    state.script,
    {
      NODE_NAME: state.node,
      TIMEOUT_SECONDS: String(state.timeoutSeconds),
      POLL_SECONDS: String(state.pollSeconds),
      MEMBERS_SCRIPT: state.membersScript,
    },
    (state.timeoutSeconds + 120) * 1000,
  );
}

export const joinGateProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: JoinGateState, news: JoinGateState) {
    const keys = [
      "script",
      "membersScript",
      "sshPrivateKey",
      "timeoutSeconds",
      "pollSeconds",
    ] as const;
    return { changes: ssh.inputsDiffer(olds, news, [...keys, "connection"]) };
  },
  async create(inputs: JoinGateState) {
    await gate(inputs);
    return { id: `${inputs.node}/join-gate`, outs: inputs };
  },
  async read(id: string, props: JoinGateState) {
    return { id, props };
  },
  async update(_id: string, _olds: JoinGateState, news: JoinGateState) {
    await gate(news);
    return { outs: news };
  },
  async delete() {},
};
