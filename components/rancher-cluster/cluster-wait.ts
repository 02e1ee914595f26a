/**
 * A wait until a downstream cluster is active in Rancher, that says why when it is not: it polls
 * Rancher's management API `GET /v3/clusters/<c-m-id>` and logs the planner's own condition
 * message while waiting (rancher/rancher@v2.14.3 pkg/capr/planner/planner.go: "waiting for at
 * least one control plane, etcd, and worker node to be registered", "waiting for cluster agent
 * to connect", ...). When Rancher waits for the cluster agent, the agent's log and a lookup of
 * Rancher's host with a pod's resolv.conf are read on the init node (seed 000: the agent could
 * not resolve Rancher through the search domain `local`), and the cause is named in the log and
 * in the timeout error.
 */
import * as pulumi from "@pulumi/pulumi";
import type { SshEndpoint } from "../model";
import * as ssh from "../ssh/run-script";
import { FollowedMachine, machineProgress } from "./machine-progress";
import { rancherGet } from "./rancher-api";
import { redact } from "./registration";

/** The planner's message while the control plane waits for the cluster agent (planner.go). */
export const AGENT_NOT_CONNECTED = "waiting for cluster agent to connect";

export interface ClusterCondition {
  readonly type?: string;
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
}

export interface ClusterProgress {
  /** Active, with its Updated and Ready conditions True. */
  readonly done: boolean;
  readonly state: string;
  /** The first not-True condition's message, "Type: message"; empty when there is none. */
  readonly message: string;
}

const CONDITION_ORDER = ["Updated", "Ready", "Provisioned"];

/** What Rancher's v3 cluster object says about progress (contract: state, conditions). */
export function clusterProgress(body: unknown): ClusterProgress {
  const cluster = (typeof body === "object" && body !== null ? body : {}) as {
    state?: unknown;
    conditions?: unknown;
  };
  const state = typeof cluster.state === "string" ? cluster.state : "unknown";
  const conditions = (Array.isArray(cluster.conditions) ? cluster.conditions : []).filter(
    (c): c is ClusterCondition => typeof c === "object" && c !== null,
  );
  const pending = conditions
    .filter((c) => c.status !== "True")
    .sort((a, b) => rank(a.type) - rank(b.type));
  const blocking = pending.filter((c) => CONDITION_ORDER.slice(0, 2).includes(c.type ?? ""));
  const withMessage = pending.find((c) => c.message);
  return {
    done: state === "active" && blocking.length === 0,
    state,
    message: withMessage ? `${withMessage.type ?? "condition"}: ${withMessage.message}` : "",
  };
}

function rank(type: string | undefined): number {
  const i = CONDITION_ORDER.indexOf(type ?? "");
  return i < 0 ? CONDITION_ORDER.length : i;
}

/** A pod-like lookup slower than this waited out an unanswered search-domain query. */
const SLOW_LOOKUP_SECONDS = 2;

/** What cluster-agent-check.sh found on the init node. */
export interface AgentCheck {
  readonly logLines: readonly string[];
  readonly lookup: {
    readonly result: "ok" | "failed" | "timeout" | "unavailable" | "skipped";
    readonly seconds: string;
    /** The addresses answered (ok), or why the lookup could not run (unavailable). */
    readonly detail: string;
  };
}

/** Parses cluster-agent-check.sh's output; an unreadable report names the host. */
export function parseAgentCheck(stdout: string, host: string): AgentCheck {
  const lines = stdout.split("\n");
  const lookupLine = lines.find((l) => l.startsWith("lookup="));
  const m = /^lookup=(ok|failed|timeout|unavailable|skipped) (\S+) ?(.*)$/.exec(lookupLine ?? "");
  if (!m) throw new Error(`${host}: the cluster agent check printed no lookup result`);
  return {
    // The agent logs the first half of the cluster's registration token on every attempt
    // (rancher/rancher@v2.14.3 cmd/agent/main.go, "token starting with"); it goes no further.
    logLines: lines
      .filter((l) => l.startsWith("agent-log: "))
      .map((l) => l.slice(11).replace(/(token starting with )[^\s"]+/g, "$1[secret]")),
    lookup: {
      result: m[1] as AgentCheck["lookup"]["result"],
      seconds: m[2],
      detail: m[3].trim(),
    },
  };
}

/**
 * Names seed 000's cause when the check shows it: the cluster agent's log has a failed lookup of
 * Rancher's host (`lookup <host>` with `i/o timeout` or `no such host`), or a lookup with the
 * pods' resolv.conf fails. Otherwise says what was seen.
 */
export function diagnoseClusterAgent(
  check: AgentCheck,
  context: { readonly node: string; readonly rancherHost: string; readonly searchDomains: string },
): string {
  const { node, rancherHost } = context;
  const failedLookup = check.logLines.find(
    (l) => l.includes(`lookup ${rancherHost}`) && /i\/o timeout|no such host/.test(l),
  );
  const seconds = Number(check.lookup.seconds);
  // glibc waits out a dropped search-domain query (5 s per try) before it tries the bare name;
  // the agent's own resolver gives up first ("i/o timeout"). DESIGN: 10.05 s against 0.03 s.
  const slow = check.lookup.result === "ok" && seconds >= SLOW_LOOKUP_SECONDS;
  const lookupFailed = check.lookup.result === "failed" || check.lookup.result === "timeout";
  const podLookup =
    check.lookup.result === "unavailable"
      ? `the pod-like lookup could not run on ${node} (${check.lookup.detail})`
      : check.lookup.result === "ok"
        ? `a lookup of ${rancherHost} with the pods' resolv.conf (search ${context.searchDomains}, ndots:5) on ${node} answered ${check.lookup.detail} in ${check.lookup.seconds} s`
        : `a lookup of ${rancherHost} with the pods' resolv.conf (search ${context.searchDomains}, ndots:5) on ${node} ${check.lookup.result === "timeout" ? "timed out" : "failed"} after ${check.lookup.seconds} s`;
  if (failedLookup || lookupFailed || slow) {
    return (
      `seed 000: the cluster agent cannot resolve Rancher's host ${rancherHost} through the cluster DNS` +
      (failedLookup ? ` (its log: "${failedLookup.trim()}")` : "") +
      `; ${podLookup}${slow ? ", only after a search domain's query went unanswered" : ""}. Pods try ` +
      `${rancherHost} with each search domain first (ndots:5), and a search domain whose queries are ` +
      "dropped (the libvirt network's `local`) makes the lookup time out. Answer " +
      `${rancherHost} in the cluster DNS (dns.staticHosts) and make the dropped domain fail fast ` +
      "(dns.neutralizedSearchDomains); the rke2-coredns chartValues carry both."
    );
  }
  const last = check.logLines.slice(-3).join(" | ");
  return (
    `the cluster agent resolves ${rancherHost} (${podLookup}); ` +
    (check.logLines.length > 0
      ? `its last log lines on ${node}: ${last}`
      : `no cattle-cluster-agent log on ${node} yet (is the pod scheduled?)`)
  );
}

export interface ClusterWaitState {
  /** The downstream cluster's name, and what this wait follows (for messages). */
  readonly cluster: string;
  readonly after: string;
  /** Rancher's v1 cluster id (c-m-...). */
  readonly clusterId: string;
  readonly rancherUrl: string;
  /** Rancher API token; a secret. */
  readonly apiToken: string;
  readonly caCertificate?: string;
  readonly timeoutSeconds: number;
  readonly pollSeconds: number;
  /** The init node, where the pod-like lookup runs when no node has the agent's log. */
  readonly initNode: string;
  readonly connection: SshEndpoint;
  /**
   * The cluster's nodes in the order the agent's scheduling prefers them: cattle-cluster-agent
   * may run on any Linux node and prefers control-plane nodes (rancher/rancher@v2.14.3
   * pkg/systemtemplate/template.go, the Deployment's affinity and tolerations). Its log is looked
   * for on each in turn; the lookup runs where it is found.
   */
  readonly agentNodes: readonly { readonly node: string; readonly connection: SshEndpoint }[];
  /** The machines registered in the step this wait follows (their plan secrets). */
  readonly machines?: readonly FollowedMachine[];
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  readonly checkScript: string;
  readonly rancherHost: string;
  /** The kubelet's cluster-dns (pods' nameserver) and the cluster domain. */
  readonly podNameserver: string;
  readonly clusterDomain: string;
}

/** Runs the check on one node; `needsLog`: stop before the lookup where the agent has no log. */
async function checkOn(
  state: ClusterWaitState,
  target: AgentCandidate,
  needsLog: boolean,
): Promise<AgentCheck> {
  const result = await ssh.runHostScript(target.connection, state, state.checkScript, {
    label: `node ${target.node}`,
    lockName: `cluster-agent-check-${state.cluster}`,
    params: {
      RANCHER_HOST: state.rancherHost,
      NAMESERVER: state.podNameserver,
      CLUSTER_DOMAIN: state.clusterDomain,
      LOOKUP_SECONDS: "20",
      NEEDS_AGENT_LOG: needsLog ? "yes" : "no",
    },
    timeoutMs: 120000,
  });
  return parseAgentCheck(result.stdout, `node ${target.node}`);
}

/** A node the agent check can run on. */
export interface AgentCandidate {
  readonly node: string;
  readonly connection: SshEndpoint;
}

/**
 * Finds the node whose kubelet runs cattle-cluster-agent (its pod log directory) among
 * `state.agentNodes`, in order, and diagnoses from the agent's log and a pod-like lookup there;
 * without such a node, the lookup runs on the init node and the diagnosis says where it looked.
 * `check` runs the check script on one node (`needsLog`: stop before the lookup without a log).
 */
export async function diagnoseWhereAgentRuns(
  state: Pick<
    ClusterWaitState,
    "agentNodes" | "initNode" | "connection" | "clusterDomain" | "rancherHost" | "apiToken"
  >,
  check: (target: AgentCandidate, needsLog: boolean) => Promise<AgentCheck>,
): Promise<string> {
  const secrets = [state.apiToken];
  const d = state.clusterDomain;
  const context = (node: string) => ({
    node,
    rancherHost: state.rancherHost,
    searchDomains: `cattle-system.svc.${d} svc.${d} ${d} + the node's`,
  });
  const unchecked: string[] = [];
  for (const candidate of state.agentNodes ?? []) {
    try {
      const found = await check(candidate, true);
      if (found.lookup.result !== "skipped") {
        return diagnoseClusterAgent(found, context(candidate.node));
      }
    } catch (err) {
      unchecked.push(`${candidate.node} (${redact((err as Error).message, secrets)})`);
    }
  }
  const init = { node: state.initNode, connection: state.connection };
  const nowhere =
    `no node of the cluster has a cattle-cluster-agent log (looked on ${(state.agentNodes ?? []).map((n) => n.node).join(", ")}` +
    (unchecked.length > 0 ? `; could not look on ${unchecked.join(", ")}` : "") +
    ")";
  try {
    return `${nowhere}; ${diagnoseClusterAgent(await check(init, false), context(init.node))}`;
  } catch (err) {
    return `${nowhere}; the cluster agent could not be checked on ${state.initNode}: ${redact((err as Error).message, secrets)}`;
  }
}

const checkAgent = (state: ClusterWaitState) =>
  diagnoseWhereAgentRuns(state, (target, needsLog) => checkOn(state, target, needsLog));

/** What the wait reads and does; the provider passes the real ones, tests their own. */
export interface ClusterWaitIo {
  /** The body of GET /v3/clusters/<id>. */
  readonly fetchCluster: () => Promise<unknown>;
  /** The body of GET of a followed machine's plan secret. */
  readonly fetchPlanSecret: (machine: FollowedMachine) => Promise<unknown>;
  /** The cluster agent check on the init node, as a diagnosis sentence. */
  readonly checkAgent: () => Promise<string>;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly info: (line: string) => void;
  readonly warn: (line: string) => void;
}

/**
 * What each followed machine still lacks ("<node>: <what>"), read before the cluster: Rancher's
 * planner plans a new machine on its own pass and the management cluster's conditions follow a
 * pass later (rancher/rancher@v2.14.3 pkg/controllers/capr/planner/controller.go,
 * pkg/controllers/provisioningv2/provisioningcluster/controller.go), so a cluster that still
 * reads active may not have seen the machine just registered.
 */
async function machinesMissing(
  machines: readonly FollowedMachine[],
  io: ClusterWaitIo,
  secrets: readonly string[],
): Promise<{ missing: string[]; failed: string[] }> {
  const rows = await Promise.all(
    machines.map(async (m) => {
      try {
        const progress = machineProgress(await io.fetchPlanSecret(m));
        return {
          missing: progress.done ? "" : `${m.node}: ${redact(progress.missing, secrets)}`,
          failed: progress.failed ? `${m.node}: ${redact(progress.failed, secrets)}` : "",
        };
      } catch (err) {
        const why = redact((err as Error).message, secrets);
        return {
          missing: `${m.node}: its plan secret ${m.namespace}/${m.secretName} could not be read (${why})`,
          failed: "",
        };
      }
    }),
  );
  return {
    missing: rows.map((r) => r.missing).filter((r) => r !== ""),
    failed: rows.map((r) => r.failed).filter((r) => r !== ""),
  };
}

/**
 * Waits until every followed machine is planned, applied and healthy and then the cluster is
 * active; logs what is missing per machine and Rancher's message; the timeout error explains.
 */
export async function waitForCluster(
  state: Pick<
    ClusterWaitState,
    "cluster" | "after" | "apiToken" | "timeoutSeconds" | "pollSeconds" | "machines"
  >,
  io: ClusterWaitIo,
): Promise<void> {
  const started = io.now();
  const label = `cluster ${state.cluster} (after ${state.after})`;
  const machines = state.machines ?? [];
  let last = "";
  let lastLog = -Infinity;
  let agentWaitSince: number | undefined;
  let diagnosis: string | undefined;
  for (;;) {
    const elapsed = Math.round((io.now() - started) / 1000);
    const { missing, failed } = await machinesMissing(machines, io, [state.apiToken]);
    // Rancher has counted a plan as failed for good: waiting longer changes nothing.
    if (failed.length > 0) {
      throw new Error(
        `${label}: ${failed.join("; ")}. Found ${elapsed} s into the wait. The nodes stay ` +
          "registered; fix the cause and run pulumi up again.",
      );
    }
    let progress: ClusterProgress;
    try {
      progress = clusterProgress(await io.fetchCluster());
    } catch (err) {
      progress = {
        done: false,
        state: "unreachable",
        message: redact((err as Error).message, [state.apiToken]),
      };
    }
    if (progress.done && missing.length === 0) {
      const each = machines.length > 0 ? ` with ${machines.map((m) => m.node).join(", ")}` : "";
      io.info(`${label}: active${each} after ${elapsed} s`);
      return;
    }
    const now =
      `${progress.state}${progress.message ? `; ${progress.message}` : ""}` +
      (missing.length > 0 ? `; ${missing.join("; ")}` : "");
    if (now !== last || io.now() - lastLog >= 30000) {
      io.info(`${label}: waiting (${elapsed} s of ${state.timeoutSeconds} s): ${now}`);
      last = now;
      lastLog = io.now();
    }
    const agentWait = progress.message.includes(AGENT_NOT_CONNECTED);
    agentWaitSince = agentWait ? (agentWaitSince ?? io.now()) : undefined;
    const timedOut = elapsed >= state.timeoutSeconds;
    // The agent gets a while to start and connect before its log and a lookup are read; at the
    // timeout they are read again for the error.
    const agentGrace = Math.min(120, state.timeoutSeconds / 2) * 1000;
    const agentWaitedLong = agentWaitSince !== undefined && io.now() - agentWaitSince >= agentGrace;
    if (agentWait && (timedOut || (diagnosis === undefined && agentWaitedLong))) {
      diagnosis = await io.checkAgent();
      io.warn(`${label}: Rancher is ${AGENT_NOT_CONNECTED}: ${diagnosis}`);
    }
    if (timedOut) {
      throw new Error(
        `${label} is not active ${state.timeoutSeconds} s after its registrations: Rancher says ${now || "nothing"}` +
          (agentWait && diagnosis ? `. ${diagnosis}` : "") +
          ". The nodes stay registered; fix the cause and run pulumi up again.",
      );
    }
    await io.sleep(state.pollSeconds * 1000);
  }
}

/** The wait against Rancher's API and the init node, logging to Pulumi. */
function waitAgainstRancher(state: ClusterWaitState): Promise<void> {
  const target = {
    url: state.rancherUrl,
    token: state.apiToken,
    caCertificate: state.caCertificate,
  };
  return waitForCluster(state, {
    fetchCluster: () => rancherGet(target, `/v3/clusters/${encodeURIComponent(state.clusterId)}`),
    fetchPlanSecret: (m) =>
      rancherGet(
        target,
        `/api/v1/namespaces/${encodeURIComponent(m.namespace)}/secrets/${encodeURIComponent(m.secretName)}`,
      ),
    checkAgent: () => checkAgent(state),
    now: () => Date.now(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    info: (line) => pulumi.log.info(line),
    warn: (line) => pulumi.log.warn(line),
  });
}

export const clusterWaitProvider: pulumi.dynamic.ResourceProvider = {
  // A wait that finished stays finished, unless a machine it follows is another one now (a node
  // registered again): then it waits for that machine. A state written before machines were
  // followed has none, and is no change.
  async diff(_id: string, olds: ClusterWaitState, news: ClusterWaitState) {
    return {
      changes: olds.machines !== undefined && ssh.inputsDiffer(olds, news, ["machines"]),
      replaces: ssh.inputsDiffer(olds, news, ["clusterId"]) ? ["clusterId"] : [],
    };
  },
  async create(inputs: ClusterWaitState) {
    await waitAgainstRancher(inputs);
    return { id: `${inputs.cluster}/active-after-${inputs.after}`, outs: inputs };
  },
  async update(_id: string, _olds: ClusterWaitState, news: ClusterWaitState) {
    await waitAgainstRancher(news);
    return { outs: news };
  },
  async read(id: string, props: ClusterWaitState) {
    return { id, props };
  },
  async delete() {},
};
