/**
 * Dynamic providers for the ordered steps of an RKE2 cluster: RKE2 on a node (config.yaml
 * adopted and its managed keys written, installed, started, upgraded or restarted when its
 * version or config changed) and the join gate. Both run scripts over SSH. `read` of a node
 * reports what is there (installed version, unit state, the managed keys of config.yaml as the
 * host has them, a restart still pending, etcd membership), so refresh shows a stopped server,
 * a hand-edited managed key, a restart that did not happen or a wrong version. State carries
 * no value derived from the token: the managed keys are kept without it, and the token is
 * compared on the host by hash. Neither undoes anything on delete: RKE2 is never uninstalled
 * and etcd data never removed by Pulumi.
 */
import * as pulumi from "@pulumi/pulumi";
import { urlHost, type ArtifactsSource, type SshEndpoint } from "../model";
import * as ssh from "../ssh/run-script";
import type { HostKeyState } from "../ssh/host-material";
import { scriptText } from "../assets";
import * as YAML from "yaml";
import { mirroredRelease, releaseArtifacts, stagingDirOf } from "./artifacts";
import { dataDirOf, effectiveConfigOf, FoundConfig, planConfig } from "./config-adoption";
import { parseMemberList } from "./etcd-members";
import { planRegistries, RegistriesWanted, registriesPathOf } from "./registries";
import { clusterReleaseProblem } from "./releases";
import { decideStart, isMemberList, NodeFacts, parseNodeFacts, StartContext } from "./start-plan";

/** Another server, reached over SSH to read its facts. */
export interface ServerRef {
  readonly node: string;
  readonly connection: SshEndpoint;
}

/**
 * Another server as the first server checks it: its managed config.yaml keys as the stack
 * renders them without the token (plain, like managedKeys), planned against its own files before
 * any server changes.
 */
export interface PeerRef extends ServerRef {
  readonly config?: string;
}

/** A server of the stack as another step refers to it: its name and pinned SSH endpoint. */
export function serverRef(server: { readonly name: string; readonly ssh: SshEndpoint }): ServerRef {
  return { node: server.name, connection: ssh.pinnedEndpoint(server.ssh) };
}

export interface NodeStartInputs {
  readonly node: string;
  /** The node's address, as etcd's peer URL carries it. */
  readonly nodeIp: string;
  readonly role: "server" | "agent";
  readonly connection: SshEndpoint;
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  readonly script: string;
  readonly factsScript: string;
  readonly membersScript: string;
  readonly version: string;
  readonly installCommand: string;
  /** Installs from one release's artifacts instead of installCommand: from a directory on the
   * operator's side, or downloaded there from a mirror (`rke2.artifacts`; ./artifacts.ts). */
  readonly artifacts?: ArtifactsSource;
  /** The config.yaml keys the stack manages, rendered with the token: a secret. */
  readonly config: string;
  /** The same keys without the token, each as RKE2 reads its value: what the stack wants. */
  readonly managedKeys: Readonly<Record<string, string>>;
  /**
   * The registries.yaml entries the stack manages with their credentials (JSON of
   * RegistriesWanted): a secret. Absent when the stack leaves registries.yaml alone.
   */
  readonly registries?: string;
  /** The same entries, credentials as markers: what the stack wants (plain). */
  readonly managedRegistries?: Readonly<Record<string, string>>;
  /**
   * `rke2.drain`: before RKE2 restarts on this node while it runs, cordon and drain it, and make it
   * schedulable again once it is back (drain-node.sh, run on `through`, the cluster's first
   * server; its data-dir as that server's step found it, absent on the first server itself).
   */
  readonly drain?: {
    readonly script: string;
    readonly timeoutSeconds: number;
    readonly podSelector: string;
    readonly through: ServerRef & { readonly dataDir?: string };
  };
  /** A joining server: the server whose etcd says whether this one is a member. */
  readonly joinsThrough?: ServerRef;
  /**
   * The server listed first: the other servers, checked before it changes anything (etcd data
   * beside a bootstrap, a release path for all, a config.yaml plan each one would refuse).
   */
  readonly peers?: readonly PeerRef[];
}

export interface NodeStartState extends NodeStartInputs {
  /** As found: the managed keys as config.yaml (or RKE2's default) has them in effect. */
  readonly managedKeys: Readonly<Record<string, string>>;
  /** As found: the managed registries.yaml entries, credentials as markers. */
  readonly managedRegistries?: Readonly<Record<string, string>>;
  /** As found: a restart a change made on the host still owes ("" when none). */
  readonly restartPending: string;
  /** As found: the node name RKE2 uses there, and its data-dir. */
  readonly hostNodeName: string;
  readonly dataDir: string;
  /** Servers: the etcd cluster ID when first seen; a first server rebuilt into another is refused. */
  readonly etcdClusterId?: string;
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
/** Copying one release artifact (the images archive is about a gigabyte). */
const UPLOAD_TIMEOUT_MS = 1800000;
const MEMBER_LIST_ATTEMPTS = 3;

function runOn(
  target: SshEndpoint,
  label: string,
  key: HostKeyState,
  script: string,
  params: Record<string, string>,
  timeoutMs: number,
  lockName?: string,
) {
  return ssh.runHostScript(target, key, script, {
    label,
    params,
    timeoutMs,
    log: (line) => pulumi.log.info(line),
    ...(lockName ? { lockName } : {}),
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
    inputs,
    inputs.factsScript,
    {
      ROLE: role,
      MEMBERS_SCRIPT: scriptText(inputs.membersScript, `node ${node}`),
      ...(inputs.artifacts ? { ARTIFACTS_DIR: stagingDirOf(inputs.version) } : {}),
    },
    FACTS_TIMEOUT_MS,
  );
  const facts = parseNodeFacts(result.stdout, node, role);
  // The script reads data-dir with sed; the merged files must agree, or no path is trusted.
  const effective = effectiveConfigOf(foundConfigOf(facts, inputs.version), node);
  if (dataDirOf(effective, node) !== facts.dataDir)
    throw new Error(
      `cannot read RKE2's data-dir on ${node}: ${effective.get("data-dir")?.source ?? "its files"} ` +
        `set it in a form the facts script reads as ${facts.dataDir}. Nothing was changed; write ` +
        `data-dir as a plain line (data-dir: /path) and re-run.`,
    );
  const registriesSetting = effective.get("private-registry");
  if (
    facts.registries !== undefined &&
    registriesPathOf(registriesSetting?.value, node, registriesSetting?.source) !==
      facts.registries.path
  )
    throw new Error(
      `cannot read RKE2's private-registry on ${node}: ${registriesSetting?.source ?? "its files"} ` +
        `set it in a form the facts script reads as ${facts.registries.path}. Nothing was changed; ` +
        `write private-registry as a plain line (private-registry: /path) and re-run.`,
    );
  return facts;
}

/** What registries.yaml must become on a node; undefined when the stack leaves it alone. */
function registriesPlanOf(registries: string | undefined, facts: NodeFacts, node: string) {
  if (registries === undefined) return undefined;
  const found = facts.registries;
  if (found?.sha256 === undefined)
    throw new Error(
      `cannot read ${found?.path ?? "registries.yaml"} on ${node}: ${found ? "it is not a readable file" : "the facts script did not report it"}. ` +
        `Nothing was changed; make it readable by root (or move it aside) and re-run.`,
    );
  const wanted = JSON.parse(registries) as RegistriesWanted;
  return planRegistries(wanted, found.text, node, found.path);
}

/**
 * Copies the release artifacts to a node that is to install from them, each unless it is already
 * staged there with its SHA-256 (a re-run after a failed step), and returns the parameters that
 * make rke2-start.sh check and install them. Every file is checked here first: a file that does
 * not match the release's checksum file stops the step before anything is copied.
 */
async function stageArtifacts(inputs: NodeStartInputs, facts: NodeFacts, label: string) {
  const source = inputs.artifacts!;
  const files =
    "path" in source
      ? await releaseArtifacts(source.path, "rke2.artifacts.path")
      : await releaseArtifacts(await mirroredRelease(source, inputs.version), "rke2.artifacts.url");
  const dir = stagingDirOf(inputs.version);
  for (const file of files) {
    if (facts.stagedArtifacts?.[file.name] === file.sha256) continue;
    pulumi.log.info(`${label}: copying ${file.name} to ${dir}`);
    await ssh.uploadFile(inputs.connection, inputs, file.local, dir, file.name, {
      label,
      timeoutMs: UPLOAD_TIMEOUT_MS,
    });
  }
  return {
    ARTIFACTS_DIR: dir,
    ARTIFACTS_SHA256: files.map((f) => `${f.sha256} ${f.name}`).join("\n"),
  };
}

/**
 * How long an uncordon waits, after RKE2 restarted on a node, for the Kubernetes API to answer
 * and the Node to be Ready again (the first server's own apiserver restarts with it).
 */
const READY_WAIT_SECONDS = 600;

/** Drains a node before its restart, or uncordons it after, on the cluster's first server. */
async function drainStep(
  inputs: NodeStartInputs,
  action: "drain" | "uncordon" | "release",
  nodeName: string,
  ownDataDir: string,
) {
  const drain = inputs.drain!;
  const through = drain.through;
  const timeoutSeconds = action === "drain" ? drain.timeoutSeconds : READY_WAIT_SECONDS;
  // Labelled with the drained node: its lines read with the rest of its step.
  await runOn(
    through.connection,
    `node ${inputs.node}`,
    inputs,
    drain.script,
    {
      ACTION: action,
      NODE_NAME: nodeName,
      TIMEOUT_SECONDS: String(timeoutSeconds),
      POD_SELECTOR: drain.podSelector,
      DATA_DIR: through.node === inputs.node ? ownDataDir : (through.dataDir ?? DEFAULT_DATA_DIR),
    },
    (timeoutSeconds + 120) * 1000,
    // Agents drain side by side through the same server: one lock per drained node.
    `drain-${inputs.node}`,
  );
}

/** The address of a server's own etcd peer URL, when its etcd answered. */
function peerAddressOf(facts: NodeFacts): string | undefined {
  const list = facts.ownMembers;
  if (!isMemberList(list)) return undefined;
  const url = list.members.find((m) => m.id === list.readFrom)?.peerUrls[0];
  return url === undefined ? undefined : urlHost(url);
}

/** What the config decision reads of the facts; defaults are the installed release's. */
function foundConfigOf(facts: NodeFacts, stackVersion: string): FoundConfig {
  return {
    text: facts.configText,
    dropIns: facts.dropIns,
    environment: facts.environment,
    tokenFiles: facts.tokenFiles,
    hostName: facts.hostName,
    serverToken: facts.serverToken,
    release: /^v\d/.test(facts.version) ? facts.version : stackVersion,
    holdsEtcdData: facts.etcdData,
    peerAddress: peerAddressOf(facts),
  };
}

/** The first server's own member list, read through its facts (retried: a busy etcd can miss
 * etcdctl's short deadline; nothing has changed on any host yet). */
async function memberListOf(inputs: NodeStartInputs, through: ServerRef) {
  for (let attempt = 1; ; attempt++) {
    const own = (await factsOf(inputs, through.connection, through.node, "server")).ownMembers;
    if (isMemberList(own)) return own;
    if (attempt >= MEMBER_LIST_ATTEMPTS)
      throw new Error(
        `cannot read etcd's member list on ${through.node}: ${own.error}. Nothing was changed; ` +
          `check etcd on ${through.node} (etcdctl member list -w json) and re-run.`,
      );
    pulumi.log.info(`node ${through.node}: etcd's member list: ${own.error}; retrying`);
    await new Promise((resolve) => setTimeout(resolve, 3000));
  }
}

function membershipText(facts: NodeFacts, inputs: NodeStartInputs, decided?: string): string {
  if (inputs.role === "agent") return "agent";
  if (decided) return decided;
  const list = facts.ownMembers;
  if (!isMemberList(list)) return `unreadable: ${list.error}`;
  const me = list.members.find((m) => m.id === list.readFrom);
  return me?.isLearner ? "learner" : "voter";
}

function configPlanOf(inputs: NodeStartInputs, facts: NodeFacts) {
  return planConfig(inputs.config, foundConfigOf(facts, inputs.version), inputs.node);
}

/** The state as found on the host, keeping the inputs. */
export async function observeNode(
  inputs: NodeStartInputs,
  startedAt: string,
  lastChanges: readonly string[],
  etcdClusterId: string | undefined,
) {
  const facts = await factsOf(inputs, inputs.connection, inputs.node, inputs.role);
  const plan = configPlanOf(inputs, facts);
  const registries = registriesPlanOf(inputs.registries, facts, inputs.node);
  const state: NodeStartState = {
    ...inputs,
    managedKeys: plan.found,
    ...(registries ? { managedRegistries: registries.found } : {}),
    restartPending: facts.restartPending ?? "",
    hostNodeName: plan.hostNodeName,
    dataDir: plan.dataDir,
    ...(etcdClusterId === undefined ? {} : { etcdClusterId }),
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
  // Refuses, before anything is written, a stack token that is not the cluster's.
  const plan = configPlanOf(inputs, facts);
  const registries = registriesPlanOf(inputs.registries, facts, inputs.node);
  let joinsThrough: StartContext["joinsThrough"];
  let peersWithData: string[] | undefined;
  if (inputs.role === "server" && inputs.joinsThrough) {
    const through = inputs.joinsThrough;
    joinsThrough = { node: through.node, members: await memberListOf(inputs, through) };
  } else if (inputs.role === "server") {
    // The first server reads every other server before it changes anything: which hold etcd
    // data (a bootstrap beside them would split the cluster), which release each runs (an
    // upgrade path must work for all of them), and whether the stack's keys would be refused on
    // one of them (its step would stop the rollout halfway, this server already restarted).
    const peers: { node: string; facts: NodeFacts }[] = [];
    for (const peer of inputs.peers ?? []) {
      const peerFacts = await factsOf(inputs, peer.connection, peer.node, "server");
      if (peer.config !== undefined)
        planConfig(peer.config, foundConfigOf(peerFacts, inputs.version), peer.node);
      registriesPlanOf(inputs.registries, peerFacts, peer.node);
      peers.push({ node: peer.node, facts: peerFacts });
    }
    peersWithData = peers.filter((p) => p.facts.etcdData).map((p) => p.node);
    const releases = [{ node: inputs.node, facts }, ...peers].filter(
      (p) => p.facts.version !== "none",
    );
    const problem = clusterReleaseProblem(
      releases.map((p) => ({ node: p.node, version: p.facts.version })),
      inputs.version,
    );
    if (problem) throw new Error(`${problem}. Nothing was changed.`);
  }
  const decision = decideStart({
    node: inputs.node,
    nodeIp: inputs.nodeIp,
    role: inputs.role,
    operation,
    desired: { version: inputs.version },
    config: plan,
    registriesChanged: registries?.changedEntries,
    facts,
    joinsThrough,
    peersWithData,
    recordedClusterId: olds?.etcdClusterId,
  });
  for (const reason of decision.reasons) pulumi.log.info(`${label}: ${reason}`);
  const artifacts =
    decision.install && inputs.artifacts ? await stageArtifacts(inputs, facts, label) : {};
  // A running node is drained before it restarts; the Node is named as RKE2 registered it. One
  // that does not restart is made schedulable again if a run before cordoned it for a restart
  // and stopped before it could uncordon it (drain-node.sh release).
  const drains = inputs.drain !== undefined && facts.active && decision.action === "restart";
  if (drains) await drainStep(inputs, "drain", plan.hostNodeName, plan.dataDir);
  else if (inputs.drain !== undefined && facts.active)
    await drainStep(inputs, "release", plan.hostNodeName, plan.dataDir);
  const result = await runOn(
    inputs.connection,
    label,
    inputs,
    inputs.script,
    {
      ROLE: inputs.role,
      VERSION: inputs.version,
      INSTALL: decision.install ? "yes" : "no",
      INSTALL_COMMAND: inputs.installCommand,
      MOVE_STALE: decision.moveStale ? "yes" : "no",
      DATA_DIR: plan.dataDir,
      FOUND_SHA256: facts.configSha256,
      NEW_CONFIG_B64: decision.writeConfig ? Buffer.from(plan.text).toString("base64") : "",
      REGISTRIES_PATH: facts.registries?.path ?? "",
      REGISTRIES_FOUND_SHA256: facts.registries?.sha256 ?? "none",
      NEW_REGISTRIES_B64:
        decision.writeRegistries && registries
          ? Buffer.from(registries.text).toString("base64")
          : "",
      ACTION: decision.action,
      FACTS_SCRIPT: scriptText(inputs.factsScript, label),
      ...artifacts,
    },
    START_TIMEOUT_MS,
  );
  const changes = ssh.changedLines(result);
  if (drains) await drainStep(inputs, "uncordon", plan.hostNodeName, plan.dataDir);
  const startedAt =
    changes.length > 0 || !olds?.startedAt ? new Date().toISOString() : olds.startedAt;
  const state = await observeNode(
    inputs,
    startedAt,
    changes,
    olds?.etcdClusterId ?? decision.etcdClusterId,
  );
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
  "sshKeyFingerprint",
  "script",
  "factsScript",
  "membersScript",
  "installCommand",
  "artifacts",
  "drain",
  "joinsThrough",
  "peers",
] as const;

function tokenOf(config: string | undefined): string | undefined {
  if (config === undefined) return undefined;
  const token = (YAML.parse(config) as Record<string, unknown> | null)?.token;
  return token === undefined ? undefined : String(token);
}

/**
 * Why a node's step must run again: its version or a managed key of config.yaml differs from
 * the stack (it restarts), the token changed, a restart is still pending, or refresh found it
 * stopped or not a voting member. Managed keys are named one by one (`managedKeys["<key>"]`),
 * compared with what the host has, so `pulumi preview --diff` shows every key that will change.
 */
export function nodeStartChanges(olds: NodeStartState, news: NodeStartInputs): string[] {
  const why: string[] = [];
  if ((olds.installedVersion ?? olds.version) !== news.version) why.push("version");
  const found = olds.managedKeys ?? {};
  for (const key of new Set([...Object.keys(found), ...Object.keys(news.managedKeys)]))
    if (found[key] !== news.managedKeys[key]) why.push(`managedKeys["${key}"]`);
  // registries.yaml: each managed entry as the host has it, and the credentials by value (the
  // markers of state say only whether the host's were the stack's when last read).
  const foundEntries = olds.managedRegistries ?? {};
  const wantedEntries = news.managedRegistries ?? {};
  for (const key of new Set([...Object.keys(foundEntries), ...Object.keys(wantedEntries)]))
    if (foundEntries[key] !== wantedEntries[key]) why.push(`managedRegistries["${key}"]`);
  if (olds.registries !== news.registries && news.registries !== undefined) why.push("registries");
  // A state written before config.yaml was adopted has no config: the step reads the host again.
  if (olds.config === undefined || tokenOf(olds.config) !== tokenOf(news.config))
    why.push("config");
  if (olds.restartPending) why.push("restartPending");
  if (olds.active === false) why.push("active");
  // A learner is on its way in (the join gate waits for it); a server etcd does not list, or
  // whose etcd does not answer, has drifted.
  if (news.role === "server" && /^(none|unreadable)/.test(olds.membership ?? ""))
    why.push("membership");
  for (const key of PLAIN_INPUTS)
    if (JSON.stringify(olds[key]) !== JSON.stringify(news[key])) why.push(key);
  return why;
}

/**
 * What preview says of a drain: a running node whose step restarts RKE2 (these reasons of
 * nodeStartChanges) is drained first. The engine draws a dynamic resource's diff from its
 * properties alone, and the drain settings are the same before and after, so the diff logs it.
 */
export function drainNotice(olds: NodeStartState, news: NodeStartInputs, why: readonly string[]) {
  if (!news.drain || olds.active === false) return undefined;
  const restarts = why.filter((k) =>
    /^(version|managedKeys\[|managedRegistries\[|registries$|restartPending$)/.test(k),
  );
  if (restarts.length === 0) return undefined;
  const node = olds.hostNodeName ?? news.node;
  return `${news.node}: drains ${node} before RKE2 restarts there (${restarts.join(", ")}), and uncordons it once it is Ready`;
}

export const nodeStartProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: NodeStartState, news: NodeStartInputs) {
    const why = nodeStartChanges(olds, news);
    const notice = drainNotice(olds, news, why);
    if (notice) pulumi.log.info(notice);
    return {
      changes: why.length > 0,
      // Compared with the host's values (state), not with the previous inputs.
      detailedDiff: Object.fromEntries(
        why.map((k) => [k, { kind: "update" as const, inputDiff: false }]),
      ),
    };
  },
  async create(inputs: NodeStartInputs) {
    return { id: `${inputs.node}/rke2-${inputs.role}`, outs: await startOnNode("create", inputs) };
  },
  async read(id: string, props: NodeStartState) {
    return {
      id,
      props: await observeNode(
        props,
        props.startedAt,
        props.lastChanges ?? [],
        props.etcdClusterId,
      ),
    };
  },
  async update(_id: string, olds: NodeStartState, news: NodeStartInputs) {
    return { outs: await startOnNode("update", news, olds) };
  },
  // RKE2 stays installed and etcd keeps its data: deleting this resource changes nothing.
  async delete() {},
};

/** The server whose etcd cluster a joining server must be in: the cluster's first server. */
export interface FirstServerRef extends ServerRef {
  /** RKE2's data-dir there, as its node step found it (default /var/lib/rancher/rke2). */
  readonly dataDir?: string;
}

export interface JoinGateState {
  readonly node: string;
  readonly connection: SshEndpoint;
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  readonly script: string;
  readonly membersScript: string;
  readonly timeoutSeconds: number;
  readonly pollSeconds: number;
  /** RKE2's data-dir on the server, as its node step found it. */
  readonly dataDir: string;
  /** The server's last start or restart: the gate runs again after each. */
  readonly serverStartedAt: string;
  /** A joining server: the first server, whose etcd cluster ID this server's etcd must answer with
   * (a server that started a cluster of its own is Ready, a voter and learner-free on its own). */
  readonly firstServer?: FirstServerRef;
}

const DEFAULT_DATA_DIR = "/var/lib/rancher/rke2";

/**
 * The ID of the etcd cluster the first server's own etcd answers for, read there over SSH with the
 * members script (retried: a busy etcd can miss etcdctl's short deadline). Fails, naming both
 * servers, when it cannot be read: the gate could not tell which cluster the server joined.
 */
export async function firstServerClusterId(state: JoinGateState, first: FirstServerRef) {
  let why = "";
  for (let attempt = 1; attempt <= MEMBER_LIST_ATTEMPTS; attempt++) {
    try {
      const result = await runOn(
        first.connection,
        `node ${first.node}`,
        state,
        state.membersScript,
        { DATA_DIR: first.dataDir ?? DEFAULT_DATA_DIR },
        FACTS_TIMEOUT_MS,
      );
      return parseMemberList(result.stdout, first.node).clusterId;
    } catch (err) {
      why = (err as Error).message;
    }
    if (attempt < MEMBER_LIST_ATTEMPTS) await new Promise((resolve) => setTimeout(resolve, 3000));
  }
  throw new Error(
    `join gate for ${state.node}: cannot reach the etcd cluster of the first server ${first.node} ` +
      `to compare cluster IDs: ${why}`,
  );
}

async function gate(state: JoinGateState): Promise<void> {
  const first = state.firstServer;
  const firstClusterId = first ? await firstServerClusterId(state, first) : "";
  await runOn(
    state.connection,
    `node ${state.node}`,
    state,
    state.script,
    {
      NODE_NAME: state.node,
      TIMEOUT_SECONDS: String(state.timeoutSeconds),
      POLL_SECONDS: String(state.pollSeconds),
      MEMBERS_SCRIPT: scriptText(state.membersScript, `node ${state.node}`),
      DATA_DIR: state.dataDir ?? DEFAULT_DATA_DIR,
      FIRST_SERVER: first?.node ?? "",
      FIRST_SERVER_CLUSTER_ID: firstClusterId,
    },
    (state.timeoutSeconds + 120) * 1000,
  );
}

export const joinGateProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: JoinGateState, news: JoinGateState) {
    const keys = [
      "script",
      "membersScript",
      "sshKeyFingerprint",
      "timeoutSeconds",
      "pollSeconds",
      "connection",
      "dataDir",
      "serverStartedAt",
      "firstServer",
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
