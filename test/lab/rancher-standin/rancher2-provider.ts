/**
 * STAND-IN for the `rancher2` Pulumi provider plugin — not pulumi-rancher2. The real plugin is a
 * Go binary that cannot be built or downloaded here, so this Node plugin (pulumi.provider.main)
 * serves the two resources the program uses, against the lab's Rancher stand-in over HTTPS with
 * the provider's own configuration (apiUrl, tokenKey, caCerts as the stack sets them). It
 * computes nothing itself: every value comes from the Rancher stand-in's answers.
 *   - rancher2:index/clusterV2:ClusterV2: create/read/update/delete a custom cluster; outputs
 *     clusterV1Id (the management cluster's `c-m-...` id) and clusterRegistrationToken
 *     {token, nodeCommand, insecureNodeCommand} as Rancher formats them.
 *   - rancher2:index/clusterSync:ClusterSync, as rancher/terraform-provider-rancher2@v14.1.1 (the
 *     Rancher 2.14 line; the same code in v13.1.4 and v15.0.0-rc.16, see STANDINS.md)
 *     rancher2/resource_rancher2_cluster_sync.go and config.go (WaitForClusterState) do it:
 *     GET /v3/clusters/<clusterId> every 5 s (rancher2RetriesWait) until its `Updated` condition
 *     (schema_cluster.go clusterActiveCondition) is True; Unknown keeps waiting; False fails with
 *     "Cluster ID <id>: <message>" once it has not changed for 120 s (rancher2WaitFalseCond); the
 *     create timeout (default 30 min, or the resource's customTimeouts.create) ends the wait with
 *     "Timeout waiting for cluster ID <id>"; stateConfirm > 1 repeats the wait after 5 s each.
 * It runs as `pulumi-resource-rancher2` from test/lab/rancher-standin on PATH.
 */
import * as pulumi from "@pulumi/pulumi";
import { rancherApi, RancherApiReply } from "./api-client";

const VERSION = "13.0.0";

interface ProviderConfig {
  apiUrl?: string;
  tokenKey?: string;
  caCerts?: string;
}

/** The provider's configuration as the engine sent it in Configure. */
let config: ProviderConfig = {};
/** customTimeouts.create / .update of each resource being changed, in seconds (by URN). */
const createTimeouts = new Map<string, number>();

/** A secret arrives wrapped in an object keyed by the SDK's signature key; take its value. */
function unwrap(value: unknown): unknown {
  if (typeof value === "object" && value !== null && pulumi.runtime.specialSigKey in value)
    return (value as unknown as { value: unknown }).value;
  return value;
}

/**
 * The SDK's provider server answers Configure without handing the configuration to the
 * provider; wrap its handler to keep the values (a stand-in's shortcut, not a product path).
 */
function captureConfigure(): void {
  const grpcPath = require.resolve("@grpc/grpc-js", {
    paths: [require.resolve("@pulumi/pulumi")],
  });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const grpc = require(grpcPath) as {
    Server: { prototype: { addService(service: unknown, impl: Record<string, unknown>): void } };
  };
  const addService = grpc.Server.prototype.addService;
  grpc.Server.prototype.addService = function (service, impl) {
    const configure = impl.configure as (call: unknown, cb: unknown) => void;
    impl.configure = (
      call: {
        request: {
          getArgs(): { toJavaScript(): Record<string, unknown> } | undefined;
          getVariablesMap(): { forEach(cb: (v: string, k: string) => void): void };
        };
      },
      cb: unknown,
    ) => {
      const fromArgs = call.request.getArgs()?.toJavaScript() ?? {};
      const values: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(fromArgs)) values[k] = unwrap(v);
      call.request.getVariablesMap().forEach((v, k) => {
        const key = k.replace(/^rancher2:config:/, "");
        if (values[key] === undefined) values[key] = v;
      });
      config = values as ProviderConfig;
      configure.call(impl, call, cb);
    };
    // customTimeouts reach the provider only in the gRPC request's `timeout`.
    for (const method of ["create", "update"]) {
      const handler = impl[method] as (call: unknown, cb: unknown) => void;
      impl[method] = (
        call: { request: { getUrn(): string; getTimeout(): number } },
        cb: unknown,
      ) => {
        const timeout = call.request.getTimeout();
        if (timeout > 0) createTimeouts.set(call.request.getUrn(), timeout);
        handler.call(impl, call, cb);
      };
    }
    return addService.call(this, service, impl);
  };
}

/** The stand-in's API, reached with the provider's configuration. */
function api(method: string, route: string, body?: unknown): Promise<RancherApiReply> {
  if (!config.apiUrl) throw new Error("rancher2 stand-in: apiUrl is not configured");
  const target = { apiUrl: config.apiUrl, ca: config.caCerts ?? "", token: config.tokenKey ?? "" };
  return rancherApi(target, method, route, body);
}

function expectOk(r: { status: number; json: Record<string, unknown> }, what: string) {
  if (r.status >= 300)
    throw new Error(`${what}: Rancher answered ${r.status} ${String(r.json.message ?? "")}`);
  return r.json;
}

interface ClusterView {
  id: string;
  name: string;
  conditions?: { type: string; status: string; message?: string; lastUpdateTime?: string }[];
  registrationToken: { token: string; nodeCommand: string; insecureNodeCommand: string };
}

function kubeConfigOf(cluster: ClusterView): string {
  const serverUrl = config.apiUrl!.replace(/\/$/, "");
  return `apiVersion: v1\nkind: Config\nclusters: [{name: ${cluster.name}, cluster: {server: "${serverUrl}/k8s/clusters/${cluster.id}"}}]\n`;
}

function clusterOutputs(inputs: Record<string, unknown>, cluster: ClusterView) {
  const token = cluster.registrationToken;
  return {
    ...inputs,
    clusterV1Id: cluster.id,
    resourceVersion: "1",
    kubeConfig: kubeConfigOf(cluster),
    clusterRegistrationToken: {
      clusterId: cluster.id,
      token: token.token,
      nodeCommand: token.nodeCommand,
      insecureNodeCommand: token.insecureNodeCommand,
      command: "",
      insecureCommand: "",
      manifestUrl: "",
      windowsNodeCommand: "",
      insecureWindowsNodeCommand: "",
      id: `${cluster.id}:default-token`,
      name: "default-token",
      annotations: {},
      labels: {},
    },
  };
}

const CLUSTER_V2 = "rancher2:index/clusterV2:ClusterV2";
const CLUSTER_SYNC = "rancher2:index/clusterSync:ClusterSync";
/** rancher2/config.go rancher2RetriesWait and rancher2WaitFalseCond, seconds. */
const RETRIES_WAIT = 5;
const WAIT_FALSE_COND = 120;
/** schema.DefaultTimeout(30 * time.Minute) of resource_rancher2_cluster_sync.go. */
const DEFAULT_CREATE_TIMEOUT = 30 * 60;

const typeOf = (urn: string) => urn.split("::")[2].split("$").pop()!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** config.go WaitForClusterState(clusterID, "Updated", timeout). */
async function waitForClusterState(id: string, timeoutSeconds: number): Promise<ClusterView> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const r = await api("GET", `/v3/clusters/${id}`);
    if (r.status < 300) {
      const cluster = r.json as unknown as ClusterView;
      const cond = cluster.conditions?.find((c) => c.type === "Updated");
      if (cond && cond.status === "True") return cluster;
      if (cond && cond.status === "False") {
        const last = Date.parse(cond.lastUpdateTime ?? "");
        if (Number.isNaN(last) || Date.now() - last >= WAIT_FALSE_COND * 1000)
          throw new Error(`Cluster ID ${id}: ${cond.message ?? ""}`);
      }
    } else if (r.status < 500 && r.status !== 404 && r.status !== 403) {
      throw new Error(`Getting cluster ID (${id}): ${r.status} ${String(r.json.message ?? "")}`);
    }
    if (Date.now() + RETRIES_WAIT * 1000 > deadline)
      throw new Error(`Timeout waiting for cluster ID ${id}`);
    await sleep(RETRIES_WAIT * 1000);
  }
}

/** resource_rancher2_cluster_sync.go resourceRancher2ClusterSyncCreate. */
async function syncCluster(urn: string, inputs: Record<string, unknown>) {
  const id = String(inputs.clusterId);
  const timeout = createTimeouts.get(urn) ?? DEFAULT_CREATE_TIMEOUT;
  let cluster = await waitForClusterState(id, timeout);
  const retries = Number(inputs.stateConfirm ?? 1);
  for (let i = 1; i < retries; i++) {
    await sleep(RETRIES_WAIT * 1000);
    cluster = await waitForClusterState(id, timeout);
  }
  return {
    ...inputs,
    synced: true,
    kubeConfig: kubeConfigOf(cluster),
    defaultProjectId: `${cluster.id}:p-default`,
    systemProjectId: `${cluster.id}:p-system`,
  };
}

const provider: pulumi.provider.Provider = {
  version: VERSION,
  async check(_urn, _olds, news) {
    return { inputs: news };
  },
  async diff(_id, urn, olds, news) {
    const keys =
      typeOf(urn) === CLUSTER_V2 ? ["name", "kubernetesVersion", "rkeConfig"] : ["clusterId"];
    const changed = keys.filter((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]));
    return {
      changes: changed.length > 0,
      replaces: changed.filter((k) => k === "name" || k === "clusterId"),
    };
  },
  async create(urn, inputs) {
    if (typeOf(urn) === CLUSTER_V2) {
      const cluster = expectOk(
        await api("POST", "/v3/clusters", inputs),
        `cluster ${String(inputs.name)}`,
      ) as unknown as ClusterView;
      return { id: `fleet-default/${String(inputs.name)}`, outs: clusterOutputs(inputs, cluster) };
    }
    if (typeOf(urn) === CLUSTER_SYNC) {
      return { id: String(inputs.clusterId), outs: await syncCluster(urn, inputs) };
    }
    throw new Error(`rancher2 stand-in: unsupported resource ${typeOf(urn)}`);
  },
  async read(id, urn, props) {
    if (typeOf(urn) !== CLUSTER_V2 || !props) return { id, props };
    const r = await api("GET", `/v3/clusters/${String(props.clusterV1Id)}`);
    if (r.status === 404) return { id: "", props: {} };
    return {
      id,
      props: clusterOutputs(props, expectOk(r, `cluster ${id}`) as unknown as ClusterView),
    };
  },
  async update(_id, urn, olds, news) {
    if (typeOf(urn) === CLUSTER_V2) {
      const id = String(olds.clusterV1Id);
      const cluster = expectOk(await api("PUT", `/v3/clusters/${id}`, news), `cluster ${id}`);
      return { outs: clusterOutputs(news, cluster as unknown as ClusterView) };
    }
    return { outs: await syncCluster(urn, news) };
  },
  async delete(_id, urn, props) {
    if (typeOf(urn) === CLUSTER_V2)
      await api("DELETE", `/v3/clusters/${String(props.clusterV1Id)}`);
  },
};

captureConfigure();
void pulumi.provider.main(provider, process.argv.slice(2));
