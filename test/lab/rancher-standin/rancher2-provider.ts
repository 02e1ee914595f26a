/**
 * STAND-IN for the `rancher2` Pulumi provider plugin — not pulumi-rancher2. The real plugin is a
 * Go binary that cannot be built or downloaded here, so this Node plugin (pulumi.provider.main)
 * serves the two resources the program uses, against the lab's Rancher stand-in over HTTPS with
 * the provider's own configuration (apiUrl, tokenKey, caCerts as the stack sets them):
 *   - rancher2:index/clusterV2:ClusterV2: create/read/update/delete a custom cluster; outputs
 *     clusterV1Id and clusterRegistrationToken whose nodeCommand pins the CA by --ca-checksum,
 *     as Rancher's does;
 *   - rancher2:index/clusterSync:ClusterSync: waits (bounded) until the cluster is active.
 * It runs as `pulumi-resource-rancher2` from test/lab/rancher-standin on PATH.
 */
import * as pulumi from "@pulumi/pulumi";
import { rancherApi, RancherApiReply } from "./api-client";
import {
  rancherCaChecksum,
  rancherNodeCommand,
} from "../../../components/rancher-cluster/registration";

const VERSION = "13.0.0";
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

interface ProviderConfig {
  apiUrl?: string;
  tokenKey?: string;
  caCerts?: string;
}

/** The provider's configuration as the engine sent it in Configure. */
let config: ProviderConfig = {};

function unwrap(value: unknown): unknown {
  if (typeof value === "object" && value !== null && SECRET_SIG in value)
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

function clusterOutputs(inputs: Record<string, unknown>, cluster: Record<string, unknown>) {
  const serverUrl = config.apiUrl!.replace(/\/$/, "");
  const token = String(cluster.registrationToken);
  const caChecksum = config.caCerts ? rancherCaChecksum(config.caCerts) : undefined;
  // Lab nodes run as root without sudo.
  const command = (insecure: boolean) =>
    rancherNodeCommand({ serverUrl, token, caChecksum, insecure, shell: "sh" });
  return {
    ...inputs,
    clusterV1Id: cluster.id,
    resourceVersion: "1",
    kubeConfig: `apiVersion: v1\nkind: Config\nclusters: [{name: ${String(cluster.name)}, cluster: {server: "${serverUrl}/k8s/clusters/${String(cluster.id)}"}}]\n`,
    clusterRegistrationToken: {
      clusterId: cluster.id,
      token,
      nodeCommand: command(false),
      insecureNodeCommand: command(true),
      command: "",
      insecureCommand: "",
      manifestUrl: "",
      windowsNodeCommand: "",
      insecureWindowsNodeCommand: "",
      id: `${String(cluster.id)}:default-token`,
      name: "default-token",
      annotations: {},
      labels: {},
    },
  };
}

const CLUSTER_V2 = "rancher2:index/clusterV2:ClusterV2";
const CLUSTER_SYNC = "rancher2:index/clusterSync:ClusterSync";

const typeOf = (urn: string) => urn.split("::")[2].split("$").pop()!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function syncCluster(inputs: Record<string, unknown>) {
  const id = String(inputs.clusterId);
  const confirmations = Number(inputs.stateConfirm ?? 1);
  const deadline = Date.now() + 600000;
  let seen = 0;
  for (;;) {
    const cluster = expectOk(await api("GET", `/v3/clusters/${id}`), `cluster ${id}`);
    seen = cluster.state === "active" ? seen + 1 : 0;
    if (seen >= confirmations) return cluster;
    if (Date.now() > deadline)
      throw new Error(`cluster ${id} is ${String(cluster.state)}, not active, after 600 s`);
    await sleep(1000);
  }
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
      );
      return { id: `fleet-default/${String(inputs.name)}`, outs: clusterOutputs(inputs, cluster) };
    }
    if (typeOf(urn) === CLUSTER_SYNC) {
      const cluster = await syncCluster(inputs);
      return {
        id: String(inputs.clusterId),
        outs: {
          ...inputs,
          synced: true,
          kubeConfig: clusterOutputs({}, cluster).kubeConfig,
          defaultProjectId: `${String(cluster.id)}:p-default`,
          systemProjectId: `${String(cluster.id)}:p-system`,
        },
      };
    }
    throw new Error(`rancher2 stand-in: unsupported resource ${typeOf(urn)}`);
  },
  async read(id, urn, props) {
    if (typeOf(urn) !== CLUSTER_V2 || !props) return { id, props };
    const r = await api("GET", `/v3/clusters/${String(props.clusterV1Id)}`);
    if (r.status === 404) return { id: "", props: {} };
    return { id, props: clusterOutputs(props, expectOk(r, `cluster ${id}`)) };
  },
  async update(_id, urn, olds, news) {
    if (typeOf(urn) === CLUSTER_V2) {
      const id = String(olds.clusterV1Id);
      const cluster = expectOk(await api("PUT", `/v3/clusters/${id}`, news), `cluster ${id}`);
      return { outs: clusterOutputs(news, cluster) };
    }
    return { outs: { ...news, ...(await syncCluster(news)) } };
  },
  async delete(_id, urn, props) {
    if (typeOf(urn) === CLUSTER_V2)
      await api("DELETE", `/v3/clusters/${String(props.clusterV1Id)}`);
  },
};

captureConfigure();
void pulumi.provider.main(provider, process.argv.slice(2));
