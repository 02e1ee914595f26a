/**
 * STAND-IN for Rancher's server — not Rancher. Rancher cannot run in the lab (it needs a
 * Kubernetes cluster), so this HTTPS server answers the parts of Rancher v2.14.3 that custom
 * (registered) downstream clusters touch, following Rancher's source for each behaviour:
 *
 *   - `/cacerts` serves the `cacerts` setting with "\n" appended when it does not end in one; the
 *     CA checksum in the node commands is the SHA-256 of exactly that text
 *     (rancher/rancher@v2.14.3:pkg/cacerts/handler.go, pkg/systemtemplate/import.go CAChecksum).
 *     The setting is stored without its final newline, as pasted into Rancher's settings.
 *   - Node commands in the format of rancher/rancher@v2.14.3:pkg/controllers/dashboard/
 *     clusterregistrationtoken/status.go (provisioningV2NodeCommandFormat and
 *     provisioningV2InsecureNodeCommandFormat, agent env vars empty): both carry --ca-checksum.
 *   - `/v3/connect/agent` (registration token as Bearer, X-Cattle-* headers of
 *     rancher/system-agent@v0.14.0:install.sh retrieve_connection_info): creates the custom
 *     machine `custom-` + the first 12 hex of SHA-256(X-Cattle-Id)
 *     (pkg/capr/configserver/custom.go machineRequestSecretName) and answers the connection info
 *     {namespace, secretName, kubeConfig}: server = Rancher's URL, CA data = the `cacerts` setting,
 *     a credential for the machine's plan secret (pkg/capr/configserver/server.go connectAgent).
 *   - The plan secret `<machine>-machine-plan` in `fleet-default`
 *     (pkg/capr/common.go PlanSecretFromBootstrapName), type rke.cattle.io/machine-plan, labelled
 *     rke.cattle.io/cluster-name with the cluster's name (pkg/controllers/capr/unmanaged/
 *     controller.go createMachineObjects, copied by pkg/controllers/capr/bootstrap/controller.go),
 *     readable and updatable at `/api/v1/namespaces/<ns>/secrets/<name>` (Rancher proxies `/api`
 *     to the local cluster, pkg/api/steve/proxy/proxy.go; also under /k8s/clusters/local).
 *   - The planner (pkg/capr/planner/planner.go, initnode.go, store.go, messages.go):
 *       no plan for any machine until at least one etcd, one controlplane and one worker machine
 *       are registered (clusterIsSane: "waiting for at least one control plane, etcd, and worker
 *       node to be registered");
 *       the init node is the etcd machine with the smallest name when the election runs
 *       (electInitNode over collect(), which sorts by machine name);
 *       tiers in fullReconcile's order — bootstrap (init node), etcd, control plane, "waiting for
 *       control plane to be available", "marking control plane as initialized", workers — each
 *       tier blocking the next while a machine in it is out of sync;
 *       a machine without a plan gets its first plan at once, whatever the concurrency
 *       (reconcile: `r.entry.Plan == nil`), so all new etcd machines of a tier join together;
 *       a control-plane machine stays out of sync with "waiting for cluster agent to connect"
 *       until the cluster agent has connected (reconcile, controlPlane.Status.AgentConnected);
 *       tier messages "configuring <tier> node(s) <names>[: <detail>]" (setMachineConditionStatus,
 *       atMostThree, detailedMessage) with the machine details of store.go
 *       (getPlanStatusReasonMessage, noPlanMessage, probesMessage).
 *   - `/system-agent-install.sh`: install.sh behind installer.go LinuxInstallScript's lines
 *     (STRICT_VERIFY from agent-tls-mode, strict by default; CATTLE_AGENT_BINARY_BASE_URL,
 *     CATTLE_SERVER, CATTLE_CA_CHECKSUM); an unknown registration token at /v3/connect/agent is
 *     500 "machine not found by request" (configserver/server.go, custom.go).
 *   - Controllers a pass late (planner, then the management cluster's conditions), on events and a
 *     periodic resync; GETs answer what the passes left (see controllerDelayMs).
 *   - The management cluster `/v3/clusters/<c-m-id>` (API token): `state` (summarized from the
 *     conditions, pkg/schemas/status/status.go) and `conditions`; its
 *     `Updated` condition is the planner's Ready condition — Unknown, reason Waiting, the planner's
 *     message while it waits; True when done (pkg/controllers/capr/planner/controller.go,
 *     pkg/controllers/provisioningv2/provisioningcluster/controller.go reconcileCondition(mgmtCluster,
 *     capr.Updated, rkeCP, capr.Ready)); `Connected` is the cluster agent's connection
 *     (pkg/controllers/management/clusterconnected/clusterconnected.go).
 *   - A starting Rancher, on a test's word (<dir>/config-server): `/v3/connect/agent` answers 503
 *     while CAPI is not available, then 401 while the config server's informers have not synced
 *     (pkg/capr/configserver/server.go ServeHTTP).
 *   - A failed plan: the plan secret carries `max-failures` -1 and `failure-threshold` 1 for every
 *     Linux tier (planner.go fullReconcile, store.go UpdatePlan) and keeps the agent's failure
 *     record (failed-checksum, failure-count, failed-output); the machine's message is then
 *     "failure while applying plan" (store.go SecretToNode, getPlanStatusReasonMessage).
 *   - `/v3/connect/register` (X-API-Tunnel-Token: the cluster's registration token): the cluster
 *     agent's connection (cmd/agent/main.go dials wss://<host>/v3/connect/register).
 * Simplified: a plan is {files, RKE2 release to install, unit to start}; probes are reported by
 * the agent stand-in by name (pkg/capr/planner/probe.go names); the join URL of an etcd or
 * control-plane machine is https://<its address>:9345 once its plan is applied and healthy.
 * State is kept in a JSON file, so a restarted server keeps its clusters.
 *
 *   node server.js --listen 192.168.122.20:443 --url https://ai-ear.cn --dir <state dir with
 *     ca.pem, server.pem, server-key.pem, api-token> --installer <path> --agent <path>
 *     --rke2-installer <path>
 */
import { createHash, randomBytes } from "crypto";
import * as fs from "fs";
import * as http from "http";
import * as https from "https";
import * as path from "path";
import { flags } from "./cli-flags";

type Roles = { etcd: boolean; controlplane: boolean; worker: boolean };

interface NodePlan {
  /** Files the agent writes: path -> content. */
  files: Record<string, string>;
  /** RKE2 release the agent installs (the plan's install instruction). */
  install: string;
  /** The installer the instruction runs: the lab's RKE2 installer stand-in, for Rancher's
   * system-agent-installer-rke2 image. */
  installer: string;
  /** The probes the agent runs and reports, by name (probe.go names), as the plan's `probes`
   * map of rancher/system-agent@v0.14.0 pkg/applyinator/applyinator.go Plan. */
  probes: Record<string, Record<string, never>>;
  /** The RKE2 unit the plan starts. */
  unit: "rke2-server" | "rke2-agent";
}

interface Machine {
  name: string;
  machineId: string;
  nodeName: string;
  address: string;
  roles: Roles;
  /** Token of the machine's plan service account (the connection info's credential). */
  planToken: string;
  plan?: NodePlan;
  planChecksum?: string;
  appliedChecksum?: string;
  /**
   * The labels install.sh sent with the registration (`X-Cattle-Labels`, its `--label`
   * arguments joined by commas: rancher/system-agent@v0.14.0 install.sh parse_args and the
   * /v3/connect/agent request), as given.
   */
  labels?: string;
  /** The agent's `probe-statuses` (rancher/system-agent@v0.14.0 pkg/prober/prober.go). */
  probes?: Record<string, { healthy?: boolean }>;
  /**
   * The agent's record of a failed plan, as it writes it into the secret (base64 values:
   * `failed-checksum`, `failure-count`, `failed-output`, `success-count`, `last-apply-time`;
   * rancher/system-agent@v0.14.0 pkg/k8splan/watcher.go).
   */
  failure?: Record<string, string>;
  joinUrl?: string;
}

interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastUpdateTime: string;
}

interface Cluster {
  id: string;
  name: string;
  spec: Record<string, unknown>;
  registrationToken: string;
  /** The cluster's RKE2 join token (Rancher's cluster state secret). */
  rke2Token: string;
  machines: Machine[];
  initNode?: string;
  controlPlaneInitialized: boolean;
  agentConnected: boolean;
  /** The planner's verdict from its last pass (the control plane's Ready condition). */
  planner?: { ready: boolean; message: string; registered: boolean };
  conditions: Condition[];
}

const NAMESPACE = "fleet-default";

const args = flags(process.argv.slice(2));
const dir = args.get("dir")!;
const serverUrl = args.get("url")!.replace(/\/+$/, "");
const stateFile = path.join(dir, "clusters.json");
const apiToken = fs.readFileSync(path.join(dir, "api-token"), "utf8").trim();
/** The `cacerts` setting, stored without a final newline. */
const cacertsSetting = fs.readFileSync(path.join(dir, "ca.pem"), "utf8").replace(/\n+$/, "");
let clusters: Cluster[] = fs.existsSync(stateFile)
  ? (JSON.parse(fs.readFileSync(stateFile, "utf8")) as Cluster[])
  : [];
const save = () => fs.writeFileSync(stateFile, JSON.stringify(clusters, null, 2));

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
/** What /cacerts serves: the setting with "\n" appended when missing (pkg/cacerts/handler.go). */
const servedCacerts = () =>
  cacertsSetting.endsWith("\n") ? cacertsSetting : cacertsSetting + "\n";
/** pkg/systemtemplate/import.go CAChecksum. */
const caChecksum = () => sha256(servedCacerts());

// --- the installer Rancher serves (installer.go) -----------------------------------------------

/**
 * `agent-tls-mode`: strict on a fresh v2.14 install, system-store on an upgraded one
 * (pkg/settings/setting.go AgentTLSMode, WithDefaultOnUpgrade).
 */
const agentTlsMode = args.get("agent-tls-mode") ?? "strict";
if (agentTlsMode !== "strict" && agentTlsMode !== "system-store")
  throw new Error(`--agent-tls-mode must be strict or system-store, not ${agentTlsMode}`);

/**
 * GET /system-agent-install.sh: pkg/capr/installer/installer.go LinuxInstallScript with no token
 * and no agent env vars (pkg/capr/installer/server.go): the shebang, `export STRICT_VERIFY=` (true
 * when agent-tls-mode is strict), a blank line, CATTLE_AGENT_BINARY_BASE_URL (the image sets
 * system-agent-version), CATTLE_SERVER (the server-url setting, unquoted), CATTLE_CA_CHECKSUM, an
 * empty token line and a blank line, then install.sh. The assignments override the caller's
 * environment; install.sh's own arguments (--server, --ca-checksum) override them in turn.
 */
function servedInstaller(): string {
  const strict = agentTlsMode === "strict" ? "true" : "false";
  return [
    "#!/usr/bin/env sh",
    `export STRICT_VERIFY='${strict}'`,
    "",
    `CATTLE_AGENT_BINARY_BASE_URL="${serverUrl}/assets"`,
    `CATTLE_SERVER=${serverUrl}`,
    `CATTLE_CA_CHECKSUM="${caChecksum()}"`,
    "",
    "",
    fs.readFileSync(args.get("installer")!, "utf8"),
  ].join("\n");
}

// --- node commands (status.go) -------------------------------------------------------------------

function nodeCommands(c: Cluster) {
  const ca = ` --ca-checksum ${caChecksum()}`;
  const env = ""; // AgentEnvVars(cluster, Linux): the lab's clusters set no agent env vars
  const installer = `${serverUrl}/system-agent-install.sh`;
  const tail = `sh -s - --server ${serverUrl} --label 'cattle.io/os=linux' --token ${c.registrationToken}${ca}`;
  return {
    nodeCommand: `${env} curl -fL ${installer} | sudo ${env} ${tail}`,
    insecureNodeCommand: `${env} curl --insecure -fL ${installer} | sudo ${env} ${tail}`,
  };
}

// --- the planner ---------------------------------------------------------------------------------

const isEtcd = (m: Machine) => m.roles.etcd;
const isControlPlane = (m: Machine) => m.roles.controlplane;
const isWorker = (m: Machine) => m.roles.worker;
const isOnlyWorker = (m: Machine) => m.roles.worker && !m.roles.etcd && !m.roles.controlplane;
const byName = (a: Machine, b: Machine) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

class Waiting extends Error {}

function atMostThree(names: string[]): string {
  names.sort();
  return names.length > 3
    ? `${names.slice(0, 3).join(",")} and ${names.length - 3} more`
    : names.join(",");
}

/** probe.go: etcd for etcd machines; apiserver, controller-manager, scheduler for control
 * planes; kubelet everywhere; calico (the lab's CNI) on all but etcd-only machines. */
function probeNames(m: Machine): string[] {
  const names: string[] = [];
  if (isEtcd(m)) names.push("etcd");
  if (isControlPlane(m)) names.push("kube-apiserver", "kube-controller-manager", "kube-scheduler");
  names.push("kubelet");
  if (isControlPlane(m) || isWorker(m)) names.push("calico");
  return names;
}

/** Where Rancher writes a node's RKE2 settings. */
const RANCHER_RKE2_CONFIG = "/etc/rancher/rke2/config.yaml.d/50-rancher.yaml";

function desiredPlan(c: Cluster, m: Machine, joinServer: string): NodePlan {
  const server = isEtcd(m) || isControlPlane(m);
  const config: Record<string, string> = m.nodeName ? { "node-name": m.nodeName } : {};
  if (m.address) config["node-ip"] = m.address;
  if (joinServer && joinServer !== "-") config.server = joinServer;
  config.token = c.rke2Token;
  // rancher/rancher@v2.14.3 pkg/capr/planner/planner.go (the 50-rancher.yaml constant) and
  // pkg/capr/planner/config.go (addConfigFile): Rancher writes RKE2's settings as JSON into a
  // drop-in of config.yaml, which RKE2 reads after config.yaml.
  const files: Record<string, string> = { [RANCHER_RKE2_CONFIG]: JSON.stringify(config) + "\n" };
  if (isControlPlane(m)) {
    // planner/manifests.go getClusterAgentManifestFile: the cluster agent's manifest goes to
    // every control-plane node; the credential is the cluster's registration token
    // (systemtemplate cattle-credentials secret), the container `cluster-register`.
    files["/var/lib/rancher/rke2/server/manifests/rancher/cluster-agent.yaml"] = JSON.stringify(
      {
        kind: "Deployment",
        namespace: "cattle-system",
        name: "cattle-cluster-agent",
        container: "cluster-register",
        env: { CATTLE_SERVER: serverUrl, CATTLE_CA_CHECKSUM: caChecksum() },
        credentials: { url: serverUrl, token: c.registrationToken },
      },
      null,
      2,
    );
  }
  return {
    files,
    install: String(c.spec.kubernetesVersion ?? ""),
    installer: args.get("rke2-installer")!,
    probes: Object.fromEntries(probeNames(m).map((p) => [p, {}])),
    unit: server ? "rke2-server" : "rke2-agent",
  };
}

/**
 * What the planner passes to UpdatePlan for the bootstrap, etcd, control-plane and Linux worker
 * tiers: maxFailures -1 (the agent retries for ever, 30 s apart) and failureThreshold 1 (the
 * first failure counts) (rancher/rancher@v2.14.3 pkg/capr/planner/planner.go fullReconcile's
 * reconcile calls; store.go UpdatePlan writes them as `max-failures` and `failure-threshold`).
 */
const MAX_FAILURES = -1;
const FAILURE_THRESHOLD = 1;

/** The agent's failure count for the machine's current plan (0 when it failed another). */
function failedCount(m: Machine): number {
  const read = (k: string) => Buffer.from(m.failure?.[k] ?? "", "base64").toString();
  if (!m.planChecksum || read("failed-checksum") !== m.planChecksum) return 0;
  return Number(read("failure-count")) || 0;
}

/** store.go getPlanStatusReasonMessage. */
function planStatusMessage(m: Machine): string {
  if (!m.plan) {
    if (isEtcd(m)) return "waiting for bootstrap etcd to be available";
    if (isControlPlane(m)) return "waiting for etcd to be available";
    return "waiting for control plane to be available";
  }
  if (m.appliedChecksum === undefined)
    return "waiting for agent to check in and apply initial plan";
  // store.go SecretToNode: Failed when failure-count > 0 for this plan's checksum and at least
  // the failure-threshold the planner set (1 for the Linux tiers).
  if (m.appliedChecksum !== m.planChecksum && failedCount(m) >= FAILURE_THRESHOLD)
    return "failure while applying plan";
  if (m.appliedChecksum !== m.planChecksum) return "waiting for plan to be applied";
  const unhealthy = probeNames(m).filter((p) => m.probes?.[p]?.healthy !== true);
  if (unhealthy.length > 0) return `waiting for probes: ${unhealthy.sort().join(", ")}`;
  return "";
}

/** planner.go reconcile for one tier: new machines get their plan at once; the tier blocks
 * the next while any of its machines is out of sync. */
function reconcileTier(
  c: Cluster,
  tier: string,
  include: (m: Machine) => boolean,
  exclude: (m: Machine) => boolean,
  required: boolean,
  joinServer: string,
): void {
  // "required" counts the included machines before the excluded ones are set aside.
  const included = c.machines.filter(include);
  if (required && included.length === 0) throw new Waiting(`waiting for at least one ${tier} node`);
  const outOfSync: string[] = [];
  const messages = new Map<string, string>();
  for (const m of included.filter((x) => !exclude(x)).sort(byName)) {
    const status = planStatusMessage(m);
    if (!m.plan) {
      m.plan = desiredPlan(c, m, joinServer);
      m.planChecksum = sha256(JSON.stringify(m.plan));
      outOfSync.push(m.name);
      messages.set(m.name, status);
    } else if (status !== "") {
      outOfSync.push(m.name);
      messages.set(m.name, status);
    } else if (isControlPlane(m) && !c.agentConnected) {
      outOfSync.push(m.name);
      messages.set(m.name, "waiting for cluster agent to connect");
    }
  }
  if (outOfSync.length > 0) {
    const detail = outOfSync.length === 1 ? `: ${messages.get(outOfSync[0])}` : "";
    throw new Waiting(`configuring ${tier} node(s) ${atMostThree(outOfSync)}${detail}`);
  }
}

function setCondition(c: Cluster, type: string, status: Condition["status"], message = "") {
  const reason = status === "Unknown" ? "Waiting" : "";
  const old = c.conditions.find((x) => x.type === type);
  if (old && old.status === status && old.message === message) return;
  const next = { type, status, reason, message, lastUpdateTime: new Date().toISOString() };
  c.conditions = [...c.conditions.filter((x) => x.type !== type), next];
}

/**
 * One pass of the planner (planner.go Process and fullReconcile): plans what it can and records
 * its verdict as the control plane's Ready condition (controller.go), not yet the management
 * cluster's.
 */
function plannerPass(c: Cluster): void {
  try {
    const all = c.machines;
    if (!all.some(isEtcd) || !all.some(isControlPlane) || !all.some(isWorker))
      throw new Waiting(
        "waiting for at least one control plane, etcd, and worker node to be registered",
      );
    // initnode.go electInitNode: the first etcd machine by name, kept once elected.
    if (!c.initNode || !all.some((m) => m.name === c.initNode))
      c.initNode = all.filter(isEtcd).sort(byName)[0].name;
    const init = all.find((m) => m.name === c.initNode)!;
    const isInit = (m: Machine) => m === init;
    reconcileTier(c, "bootstrap", isEtcd, (m) => !isInit(m), true, "-");
    if (!init.joinUrl) throw new Waiting("waiting for join url to be available on bootstrap node");
    reconcileTier(c, "etcd", isEtcd, isInit, true, init.joinUrl);
    reconcileTier(c, "control plane", isControlPlane, isInit, true, init.joinUrl);
    if (!all.some((m) => isControlPlane(m) && m.joinUrl))
      throw new Waiting("waiting for control plane to be available");
    if (!c.controlPlaneInitialized) {
      c.controlPlaneInitialized = true;
      throw new Waiting("marking control plane as initialized");
    }
    const cpJoin = all.find((m) => isControlPlane(m) && m.joinUrl)!.joinUrl!;
    reconcileTier(c, "worker", isOnlyWorker, isInit, false, cpJoin);
    c.planner = { ready: true, message: "", registered: true };
  } catch (err) {
    if (!(err instanceof Waiting)) throw err;
    c.planner = {
      ready: false,
      message: err.message,
      registered: !err.message.startsWith("waiting for at least one control plane"),
    };
  }
  save();
}

/**
 * One pass of the provisioning cluster's controller (provisioningcluster/controller.go
 * reconcileCondition(mgmtCluster, capr.Updated, rkeCP, capr.Ready)): copies the planner's
 * verdict, as the last planner pass left it, into the management cluster's conditions.
 */
function provisioningClusterPass(c: Cluster): void {
  const planner = c.planner ?? { ready: false, message: "", registered: false };
  setCondition(c, "Updated", planner.ready ? "True" : "Unknown", planner.message);
  setCondition(
    c,
    "Provisioned",
    planner.registered ? "True" : "Unknown",
    planner.registered ? "" : planner.message,
  );
  setCondition(c, "Connected", c.agentConnected ? "True" : "False");
  // Ready is the cluster agent's connection (clusterconnected.go: False, "Cluster agent is not
  // connected"; the health syncer sets it True once the agent serves), not the planner's.
  if (c.agentConnected) setCondition(c, "Ready", "True");
  else setCondition(c, "Ready", "False", "Cluster agent is not connected");
  save();
}

/**
 * Rancher's controllers run on events, each in its own pass: a change (a machine registered, an
 * agent's report, the cluster agent connecting, a spec update) queues a planner pass a delay
 * later, and the management cluster's conditions follow one delay after that. Until then every
 * GET answers what the last passes left, as Rancher's API does. Each cluster is also passed
 * through every RESYNC_MS (the controllers' periodic resync). The delay is
 * --controller-delay-ms, or the number in <dir>/controller-delay-ms when that file exists (a
 * test widens the window with it). While <dir>/controller-hold exists, no pass runs: a queued
 * pass waits another delay, so a test can look at the window before Rancher's passes and then
 * let them go.
 */
const RESYNC_MS = Number(args.get("resync-ms") ?? "10000");
function controllerDelayMs(): number {
  const file = path.join(dir, "controller-delay-ms");
  const fromFile = fs.existsSync(file) ? Number(fs.readFileSync(file, "utf8").trim()) : NaN;
  return Number.isFinite(fromFile) ? fromFile : Number(args.get("controller-delay-ms") ?? "1000");
}
const queued = new Set<string>();

function enqueue(c: Cluster): void {
  if (queued.has(c.id)) return;
  queued.add(c.id);
  const delay = controllerDelayMs();
  const pass = () => {
    if (fs.existsSync(path.join(dir, "controller-hold"))) {
      setTimeout(pass, delay);
      return;
    }
    queued.delete(c.id);
    const current = clusters.find((x) => x.id === c.id);
    if (!current) return;
    plannerPass(current);
    setTimeout(() => {
      const later = clusters.find((x) => x.id === c.id);
      if (later) provisioningClusterPass(later);
    }, delay);
  };
  setTimeout(pass, delay);
}

clusters.forEach(enqueue);
setInterval(() => clusters.forEach(enqueue), RESYNC_MS).unref();

/**
 * The v3 cluster's `state`, computed from its conditions as rancher/rancher@v2.14.3
 * pkg/schemas/status/status.go does with wrangler's summary (rancher/wrangler@v3.6.0
 * pkg/summary/summarizers.go): Provisioned Unknown is "provisioning", Updated Unknown
 * "updating", Ready not True "unavailable", else "active".
 */
function state(c: Cluster): string {
  const status = (type: string) => c.conditions.find((x) => x.type === type)?.status;
  if (status("Provisioned") === "Unknown") return "provisioning";
  if (status("Updated") === "Unknown") return "updating";
  if (status("Ready") !== "True") return "unavailable";
  return "active";
}

function view(c: Cluster) {
  return {
    id: c.id,
    type: "cluster",
    name: c.name,
    state: state(c),
    conditions: c.conditions,
    spec: c.spec,
    registrationToken: { token: c.registrationToken, ...nodeCommands(c) },
  };
}

// --- Kubernetes objects through Rancher's proxy ---------------------------------------------------

const FAILURE_KEYS = [
  "failed-checksum",
  "failure-count",
  "failed-output",
  "success-count",
  "last-apply-time",
];

function planSecret(c: Cluster, m: Machine) {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const data: Record<string, string> = {};
  if (m.plan) data.plan = b64(JSON.stringify(m.plan));
  if (m.appliedChecksum) data["applied-checksum"] = b64(m.appliedChecksum);
  if (m.probes) data["probe-statuses"] = b64(JSON.stringify(m.probes));
  if (m.plan) {
    data["max-failures"] = b64(String(MAX_FAILURES));
    data["failure-threshold"] = b64(String(FAILURE_THRESHOLD));
  }
  for (const [k, v] of Object.entries(m.failure ?? {})) data[k] = v;
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "rke.cattle.io/machine-plan",
    metadata: {
      name: `${m.name}-machine-plan`,
      namespace: NAMESPACE,
      labels: {
        "rke.cattle.io/cluster-name": c.name,
        "cluster.x-k8s.io/cluster-name": c.name,
        "rke.cattle.io/machine-name": m.name,
        "rke.cattle.io/machine-id": m.machineId,
      },
    },
    data,
  };
}

function kubeconfigFor(m: Machine): string {
  const ca = Buffer.from(cacertsSetting).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- cluster:",
    `    certificate-authority-data: ${ca}`,
    `    server: ${serverUrl}`,
    "  name: agent",
    "contexts:",
    "- context:",
    "    cluster: agent",
    "    user: agent",
    "  name: agent",
    "current-context: agent",
    "users:",
    "- name: agent",
    "  user:",
    `    token: ${m.planToken}`,
    "",
  ].join("\n");
}

// --- HTTP --------------------------------------------------------------------------------------

/**
 * Where the config server is in Rancher's start, from <dir>/config-server when it exists:
 * {"capiNotReadyFor": n, "informersUnsyncedFor": m} (a test plays a Rancher that has just
 * started with it): the next n requests find CAPI not available, the m after them find the
 * informers not synced. Counted in requests rather than seconds, so a test does not race the
 * installer's 5 s between tries. With no file, or both counts spent, the config server is ready.
 */
function configServerStarting(): "capi" | "informers" | undefined {
  const file = path.join(dir, "config-server");
  if (!fs.existsSync(file)) return undefined;
  const left = JSON.parse(fs.readFileSync(file, "utf8")) as {
    capiNotReadyFor?: number;
    informersUnsyncedFor?: number;
  };
  const capi = left.capiNotReadyFor ?? 0;
  const informers = left.informersUnsyncedFor ?? 0;
  if (capi <= 0 && informers <= 0) return undefined;
  const next =
    capi > 0
      ? { capiNotReadyFor: capi - 1, informersUnsyncedFor: informers }
      : { capiNotReadyFor: 0, informersUnsyncedFor: informers - 1 };
  fs.writeFileSync(file, JSON.stringify(next));
  return capi > 0 ? "capi" : "informers";
}

type Reply = (status: number, body: unknown, type?: string) => void;

function bearer(headers: http.IncomingHttpHeaders): string {
  return String(headers.authorization ?? "").replace(/^Bearer /, "");
}

function handle(
  method: string,
  url: string,
  headers: http.IncomingHttpHeaders,
  body: string,
  reply: Reply,
): void {
  const route = url.split("?")[0].replace(/^\/k8s\/clusters\/local(?=\/)/, "");
  const file = (p: string, type: string) => reply(200, fs.readFileSync(p), type);
  if (method === "GET" && (route === "/healthz" || route === "/ping"))
    return reply(200, route === "/ping" ? "pong" : "ok", "text/plain");
  if (method === "GET" && route === "/cacerts") return reply(200, servedCacerts(), "text/plain");
  // The setting itself, as the v3 API shows it without a login (what the cluster agent's run.sh
  // reads: rancher/rancher@v2.14.3 package/run.sh, `/v3/settings/cacerts | jq -r '.value'`).
  if (method === "GET" && route === "/v3/settings/cacerts")
    return reply(200, { type: "setting", id: "cacerts", name: "cacerts", value: cacertsSetting });
  if (method === "GET" && route === "/system-agent-install.sh")
    return reply(200, servedInstaller(), "text/plain");
  if (method === "GET" && route === "/assets/rancher-system-agent-amd64")
    return file(args.get("agent")!, "application/octet-stream");

  if (route === "/v3/connect/agent" && method === "GET") {
    // A Rancher that is starting: configserver/server.go ServeHTTP answers 503 until CAPI is
    // available (its Retry-After header is set after the status is written, so none is sent),
    // then 401 until its secrets and cluster-token informers have synced.
    const starting = configServerStarting();
    if (starting === "capi") return reply(503, "", "text/plain");
    if (starting === "informers") return reply(401, "", "text/plain");
    // configserver/server.go ServeHTTP: no X-Cattle-Id is 401; a token that finds no cluster
    // finds no machine, "machine not found by request", answered as 500 (custom.go
    // findMachineByClusterToken).
    const machineId = String(headers["x-cattle-id"] ?? "");
    if (!machineId) return reply(401, "missing X-Cattle-Id", "text/plain");
    const c = clusters.find((x) => x.registrationToken === bearer(headers));
    if (!c) return reply(500, "machine not found by request", "text/plain");
    const name = `custom-${sha256(machineId).slice(0, 12)}`;
    let m = c.machines.find((x) => x.name === name);
    if (!m) {
      const yes = (h: string) => String(headers[h] ?? "") === "true";
      m = {
        name,
        machineId,
        nodeName: String(headers["x-cattle-node-name"] ?? ""),
        address: String(headers["x-cattle-address"] ?? ""),
        roles: {
          etcd: yes("x-cattle-role-etcd"),
          controlplane: yes("x-cattle-role-control-plane"),
          worker: yes("x-cattle-role-worker"),
        },
        planToken: randomBytes(24).toString("hex"),
        labels: String(headers["x-cattle-labels"] ?? ""),
      };
      c.machines.push(m);
    }
    save();
    enqueue(c);
    return reply(200, {
      namespace: NAMESPACE,
      secretName: `${m.name}-machine-plan`,
      kubeConfig: kubeconfigFor(m),
    });
  }

  if (route === "/v3/connect/register" && method === "POST") {
    const c = clusters.find((x) => x.registrationToken === headers["x-api-tunnel-token"]);
    if (!c) return reply(401, { message: "unknown token" });
    c.agentConnected = true;
    save();
    enqueue(c);
    return reply(200, { connected: true });
  }

  // Deleting a custom machine (an administrator removing a reimaged node): the cluster forgets
  // it, and an init node that goes is re-elected (initnode.go electInitNode).
  const machineRoute =
    /^\/apis\/cluster\.x-k8s\.io\/v1beta2\/namespaces\/([^/]+)\/machines\/([^/]+)$/.exec(route);
  if (machineRoute && method === "DELETE") {
    if (bearer(headers) !== apiToken) return reply(401, { message: "Unauthorized" });
    const c = clusters.find((x) => x.machines.some((m) => m.name === machineRoute[2]));
    if (!c || machineRoute[1] !== NAMESPACE) return reply(404, { message: "not found" });
    c.machines = c.machines.filter((m) => m.name !== machineRoute[2]);
    if (c.initNode === machineRoute[2]) c.initNode = undefined;
    save();
    enqueue(c);
    return reply(200, { kind: "Status", status: "Success" });
  }

  const secretRoute = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(route);
  if (secretRoute) {
    const [, ns, name] = secretRoute;
    const owner = clusters
      .flatMap((c) => c.machines.map((m) => ({ c, m })))
      .find(({ m }) => ns === NAMESPACE && `${m.name}-machine-plan` === name);
    const token = bearer(headers);
    if (token !== apiToken && token !== owner?.m.planToken)
      return reply(401, { kind: "Status", message: "Unauthorized", code: 401 });
    if (!owner)
      return reply(404, { kind: "Status", message: `secrets "${name}" not found`, code: 404 });
    const { c, m } = owner;
    if (method === "PUT") {
      // The agent's report: the checksum of the plan it applied and its probes' results.
      const sent = JSON.parse(body) as { data?: Record<string, string> };
      const field = (k: string) =>
        sent.data?.[k] ? Buffer.from(sent.data[k], "base64").toString() : undefined;
      m.appliedChecksum = field("applied-checksum") ?? m.appliedChecksum;
      const probes = field("probe-statuses");
      if (probes) m.probes = JSON.parse(probes) as Machine["probes"];
      // The failure record as sent, blanked values included (a success blanks it: watcher.go).
      for (const k of FAILURE_KEYS) {
        if (sent.data && k in sent.data) m.failure = { ...m.failure, [k]: sent.data[k] };
      }
      const address = field("address");
      if (address && !m.address) m.address = address;
      if (
        (isEtcd(m) || isControlPlane(m)) &&
        m.appliedChecksum === m.planChecksum &&
        planStatusMessage(m) === "" &&
        m.address
      )
        m.joinUrl = `https://${m.address}:9345`;
      save();
      enqueue(c);
    } else if (method !== "GET") return reply(405, { message: "method not allowed" });
    return reply(200, planSecret(c, m));
  }

  if (!route.startsWith("/v3/clusters")) return reply(404, { message: "not found" });
  if (bearer(headers) !== apiToken) return reply(401, { message: "a valid API token is required" });
  const id = route.split("/")[3];
  const cluster = clusters.find((c) => c.id === id);
  const json = (body ? JSON.parse(body) : {}) as Record<string, unknown>;
  if (method === "POST" && id === undefined) {
    const name = String(json.name);
    let created = clusters.find((c) => c.name === name);
    if (!created) {
      created = {
        id: `c-m-${randomBytes(4).toString("hex")}`,
        name,
        spec: json,
        registrationToken: randomBytes(27).toString("hex").slice(0, 54),
        rke2Token: randomBytes(24).toString("hex"),
        machines: [],
        controlPlaneInitialized: false,
        agentConnected: false,
        conditions: [],
      };
      clusters.push(created);
      save();
      enqueue(created);
    }
    return reply(201, view(created));
  }
  if (!cluster) return reply(404, { message: `cluster ${id} not found` });
  if (method === "GET") return reply(200, view(cluster));
  if (method === "PUT") {
    cluster.spec = json;
    save();
    enqueue(cluster);
    return reply(200, view(cluster));
  }
  if (method === "DELETE") {
    clusters = clusters.filter((c) => c !== cluster);
    save();
    return reply(204, "");
  }
  return reply(405, { message: "method not allowed" });
}

const server = https.createServer(
  {
    cert: fs.readFileSync(path.join(dir, "server.pem")),
    key: fs.readFileSync(path.join(dir, "server-key.pem")),
  },
  (req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const reply: Reply = (status, payload, type = "application/json") => {
        res.writeHead(status, { "content-type": type });
        res.end(
          typeof payload === "string" || Buffer.isBuffer(payload)
            ? payload
            : JSON.stringify(payload),
        );
      };
      try {
        handle(req.method ?? "GET", req.url ?? "/", req.headers, body, reply);
      } catch (err) {
        reply(400, { message: (err as Error).message });
      }
    });
  },
);
const [host, port] = args.get("listen")!.split(":");
server.listen(Number(port), host, () => console.log(`rancher stand-in on ${host}:${port}`));
