/**
 * Dynamic providers for the ordered steps of an RKE2 cluster: RKE2 on a node (installed,
 * started, upgraded or restarted when its version or config changed) and the join gate. Both
 * run scripts over SSH. `read` of a node reports what is there (installed version, unit state,
 * config hash, etcd membership), so refresh shows a stopped server, a hand-edited config.yaml
 * or a wrong version. Neither undoes anything on delete: RKE2 is never uninstalled and etcd
 * data never removed by Pulumi.
 */
import * as pulumi from "@pulumi/pulumi";
import type { SshEndpoint } from "../model";
import * as ssh from "../ssh/run-script";
import { parseMemberList } from "./etcd-members";
import { decideStart, isMemberList, NodeFacts, parseNodeFacts, StartContext } from "./start-plan";

/** Another server, reached over SSH to read its facts. */
export interface ServerRef {
  readonly node: string;
  readonly connection: SshEndpoint;
}

export interface NodeStartInputs {
  readonly node: string;
  /** The node's address, as etcd's peer URL carries it. */
  readonly nodeIp: string;
  readonly role: "server" | "agent";
  readonly connection: SshEndpoint;
  readonly sshPrivateKey: string;
  readonly script: string;
  readonly factsScript: string;
  readonly membersScript: string;
  readonly version: string;
  readonly installCommand: string;
  /** SHA-256 of the config.yaml written for this node. */
  readonly configSha256: string;
  /** A joining server: the server whose etcd says whether this one is a member. */
  readonly joinsThrough?: ServerRef;
  /** The server listed first: the other servers, checked for etcd data before a bootstrap. */
  readonly peers?: readonly ServerRef[];
}

export interface NodeStartState extends NodeStartInputs {
  /** As found: release of the rke2 binary ("none" when absent). */
  readonly installedVersion: string;
  readonly active: boolean;
  /** Servers, as found: voter, learner, none, or why it could not be read. */
  readonly membership: string;
  /** When this step last started or restarted RKE2; the join gate runs again when it changes. */
  readonly startedAt: string;
  readonly lastChanges: readonly string[];
}

/** Process-local bounds of one host script (ms). */
const FACTS_TIMEOUT_MS = 60000;
const START_TIMEOUT_MS = 900000;
const MEMBER_LIST_ATTEMPTS = 3;

function runOn(
  target: SshEndpoint,
  label: string,
  privateKey: string,
  script: string,
  params: Record<string, string>,
  timeoutMs: number,
) {
  return ssh.runHostScript(target, privateKey, script, {
    label,
    params,
    timeoutMs,
    log: (line) => pulumi.log.info(line),
  });
}

async function factsOf(
  inputs: NodeStartInputs,
  target: SshEndpoint,
  node: string,
  role: "server" | "agent",
): Promise<NodeFacts> {
  const result = await runOn(
    target,
    `node ${node}`,
    inputs.sshPrivateKey,
    inputs.factsScript,
    { ROLE: role, MEMBERS_SCRIPT: inputs.membersScript },
    FACTS_TIMEOUT_MS,
  );
  return parseNodeFacts(result.stdout, node, role);
}

function membershipText(facts: NodeFacts, inputs: NodeStartInputs, decided?: string): string {
  if (inputs.role === "agent") return "agent";
  if (decided) return decided;
  const list = facts.ownMembers;
  if (!isMemberList(list)) return `unreadable: ${list.error}`;
  const me = list.members.find((m) => m.id === list.readFrom);
  return me?.isLearner ? "learner" : "voter";
}

/** The state as found on the host, keeping the inputs. */
export async function observeNode(
  inputs: NodeStartInputs,
  startedAt: string,
  lastChanges: readonly string[],
) {
  const facts = await factsOf(inputs, inputs.connection, inputs.node, inputs.role);
  const state: NodeStartState = {
    ...inputs,
    configSha256: facts.configSha256,
    installedVersion: facts.version,
    active: facts.active,
    membership: membershipText(facts, inputs),
    startedAt,
    lastChanges,
  };
  return state;
}

/** One node step as create or update run it; exported for the lab tier. */
export async function startOnNode(
  operation: "create" | "update",
  inputs: NodeStartInputs,
  olds?: NodeStartState,
): Promise<NodeStartState> {
  const label = `node ${inputs.node}`;
  const facts = await factsOf(inputs, inputs.connection, inputs.node, inputs.role);
  let joinsThrough: StartContext["joinsThrough"];
  let peersWithData: string[] | undefined;
  if (inputs.role === "server" && inputs.joinsThrough) {
    const through = inputs.joinsThrough;
    // A busy etcd can miss etcdctl's short deadline; reading is safe to retry, and the last
    // failure is the error (nothing has changed on any host yet).
    let list: ssh.ScriptResult | undefined;
    for (let attempt = 1; !list; attempt++) {
      try {
        list = await runOn(
          through.connection,
          `node ${through.node}`,
          inputs.sshPrivateKey,
          inputs.membersScript,
          {},
          FACTS_TIMEOUT_MS,
        );
      } catch (err) {
        if (attempt >= MEMBER_LIST_ATTEMPTS) throw err;
        pulumi.log.info(
          `node ${through.node}: etcd's member list: ${(err as Error).message}; retrying`,
        );
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
    }
    joinsThrough = { node: through.node, members: parseMemberList(list.stdout, through.node) };
  } else if (inputs.role === "server" && !facts.etcdData) {
    peersWithData = [];
    for (const peer of inputs.peers ?? []) {
      if ((await factsOf(inputs, peer.connection, peer.node, "server")).etcdData)
        peersWithData.push(peer.node);
    }
  }
  const decision = decideStart({
    node: inputs.node,
    nodeIp: inputs.nodeIp,
    role: inputs.role,
    operation,
    desired: { version: inputs.version, configSha256: inputs.configSha256 },
    previous: olds && {
      version: olds.installedVersion ?? olds.version,
      configSha256: olds.configSha256,
    },
    facts,
    joinsThrough,
    peersWithData,
  });
  for (const reason of decision.reasons) pulumi.log.info(`${label}: ${reason}`);
  const result = await runOn(
    inputs.connection,
    label,
    inputs.sshPrivateKey,
    inputs.script,
    {
      ROLE: inputs.role,
      VERSION: inputs.version,
      INSTALL: decision.install ? "yes" : "no",
      INSTALL_COMMAND: inputs.installCommand,
      MOVE_STALE: decision.moveStale ? "yes" : "no",
      ACTION: decision.action,
      CONFIG_SHA256: inputs.configSha256,
      FACTS_SCRIPT: inputs.factsScript,
    },
    START_TIMEOUT_MS,
  );
  const changes = ssh.changedLines(result);
  const startedAt =
    changes.length > 0 || !olds?.startedAt ? new Date().toISOString() : olds.startedAt;
  const state = await observeNode(inputs, startedAt, changes);
  // Right after a start the node's own etcd may not answer yet; keep what the cluster said.
  return state.membership.startsWith("unreadable") && changes.length > 0
    ? { ...state, membership: decision.membership ?? "starting" }
    : state;
}

/** Inputs whose change re-runs the step without, by itself, restarting anything. */
const PLAIN_INPUTS = [
  "role",
  "nodeIp",
  "connection",
  "sshPrivateKey",
  "script",
  "factsScript",
  "membersScript",
  "installCommand",
  "joinsThrough",
  "peers",
] as const;

/**
 * Why a node's step must run again: its version or config changed (it restarts), or refresh
 * found it stopped, at another version, with another config or not a voting member.
 */
export function nodeStartChanges(olds: NodeStartState, news: NodeStartInputs): string[] {
  const why: string[] = [];
  if ((olds.installedVersion ?? olds.version) !== news.version) why.push("version");
  if (olds.configSha256 !== undefined && olds.configSha256 !== news.configSha256)
    why.push("configSha256");
  if (olds.active === false) why.push("active");
  // A learner is on its way in (the join gate waits for it); a server etcd does not list, or
  // whose etcd does not answer, has drifted.
  if (news.role === "server" && /^(none|unreadable)/.test(olds.membership ?? ""))
    why.push("membership");
  for (const key of PLAIN_INPUTS)
    if (JSON.stringify(olds[key]) !== JSON.stringify(news[key])) why.push(key);
  return why;
}

export const nodeStartProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: NodeStartState, news: NodeStartInputs) {
    const why = nodeStartChanges(olds, news);
    return {
      changes: why.length > 0,
      detailedDiff: Object.fromEntries(why.map((k) => [k, { kind: "update" as const }])),
    };
  },
  async create(inputs: NodeStartInputs) {
    return { id: `${inputs.node}/rke2-${inputs.role}`, outs: await startOnNode("create", inputs) };
  },
  async read(id: string, props: NodeStartState) {
    return { id, props: await observeNode(props, props.startedAt, props.lastChanges ?? []) };
  },
  async update(_id: string, olds: NodeStartState, news: NodeStartInputs) {
    return { outs: await startOnNode("update", news, olds) };
  },
  // RKE2 stays installed and etcd keeps its data: deleting this resource changes nothing.
  async delete() {},
};

export interface JoinGateState {
  readonly node: string;
  readonly connection: SshEndpoint;
  readonly sshPrivateKey: string;
  readonly script: string;
  readonly membersScript: string;
  readonly timeoutSeconds: number;
  readonly pollSeconds: number;
  /** The server's last start or restart: the gate runs again after each. */
  readonly serverStartedAt: string;
}

async function gate(state: JoinGateState): Promise<void> {
  await runOn(
    state.connection,
    `node ${state.node}`,
    state.sshPrivateKey,
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
      "connection",
      "serverStartedAt",
    ] as const;
    return { changes: ssh.inputsDiffer(olds, news, [...keys]) };
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
