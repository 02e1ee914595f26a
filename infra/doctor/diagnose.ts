/**
 * doctor: the incidents' causes on a live estate, read over SSH with the pinned host keys, with
 * no Pulumi state and no change on any host. It runs the facts scripts the components run
 * (prepare-node.sh in its read mode, rke2-facts.sh with etcd-members.sh, preflight-ports.sh,
 * preflight-upstreams.sh) and one of its own for seed 000's search domains, each without the host
 * step's lock file, so nothing is written. Every script is bounded on the host and here; a host
 * that does not answer is a finding of its own and holds up no other.
 */
import * as path from "path";
import { factsFromScript } from "../../components/cluster-dns/egress-check-provider";
import { parseAgentCheck } from "../../components/rancher-cluster/cluster-wait";
import { parseDnsHosts } from "../../components/libvirt-dns/render";
import {
  type ClusterSettings,
  type EnvironmentModel,
  MANAGEMENT_CLUSTER,
  type NodeSpec,
  serversOf,
} from "../../components/model";
import { componentFile } from "../../components/assets";
import { parseNodeFacts as parsePreparationFacts } from "../../components/node-preparation/render";
import {
  nodeScriptParams,
  renderUnmanagedDevicesConfig,
} from "../../components/node-preparation/render";
import { parsePortChecks } from "../../components/node-preparation/preflight";
import { parseNodeFacts as parseRke2Facts } from "../../components/rke2-cluster/start-plan";
import { failureReason, runScript, type SshConnection } from "../../components/ssh/run-script";
import {
  causesOf,
  type ClusterEgress,
  type Finding,
  type HostFacts,
  type KvmFacts,
  parseJoinLog,
  parseLoopLogs,
  parseSearchProbes,
  parseUpstreamProbes,
  type Read,
  type Unchecked,
} from "./causes";

export type { Finding, Unchecked } from "./causes";

const COMPONENTS = path.resolve(__dirname, "..", "..", "components");
const script = (dir: string, name: string) => componentFile(path.join(COMPONENTS, dir), name);

/** etcd's client and peer ports (rancher/rke2-docs install/requirements.md, Inbound Rules). */
const ETCD_PORTS = [2379, 2380];

export interface DoctorProgress {
  readonly hostsDone: number;
  readonly hosts: number;
  /** The check that has run longest among those still running, with how long. */
  readonly slowest?: { readonly host: string; readonly check: string; readonly ms: number };
}

export interface DiagnoseOptions {
  /** The SSH private key for every host; it never appears in a finding or a message. */
  readonly sshPrivateKey: string;
  readonly onProgress?: (progress: DoctorProgress) => void;
  /** Bound for connecting to a host (ms). */
  readonly connectTimeoutMs?: number;
  /** Bound for each script (ms). */
  readonly scriptTimeoutMs?: number;
}

export interface DoctorReport {
  readonly stack: string;
  readonly hosts: number;
  readonly findings: readonly Finding[];
  readonly unchecked: readonly Unchecked[];
  readonly wallMs: number;
}

function clusterOf(model: EnvironmentModel, node: NodeSpec): ClusterSettings | undefined {
  if (node.cluster === MANAGEMENT_CLUSTER) return model.management;
  return model.rancher?.downstreamClusters.find((c) => c.name === node.cluster);
}

/**
 * The node of a cluster whose RKE2 kubectl reads the cluster's API: the first management server,
 * or a downstream cluster's first control-plane node (RKE2 runs its apiserver there).
 */
function firstServerOf(model: EnvironmentModel, cluster: string): NodeSpec | undefined {
  return model.nodes.find(
    (n) =>
      n.cluster === cluster &&
      (cluster === MANAGEMENT_CLUSTER
        ? n.roles.includes("server")
        : n.roles.includes("controlplane")),
  );
}

/** Reads every host of the model and names the causes found. Changes nothing anywhere. */
export async function diagnoseModel(
  model: EnvironmentModel,
  options: DiagnoseOptions,
): Promise<DoctorReport> {
  const started = Date.now();
  const running = new Map<number, { host: string; check: string; since: number }>();
  let hostsDone = 0;
  let nextId = 0;
  const report = () => {
    if (!options.onProgress) return;
    let slowest: DoctorProgress["slowest"];
    for (const r of running.values()) {
      const ms = Date.now() - r.since;
      if (!slowest || ms > slowest.ms) slowest = { host: r.host, check: r.check, ms };
    }
    options.onProgress({ hostsDone, hosts: total, slowest });
  };
  const readsKvm = model.libvirt.ssh !== undefined && model.deploy.libvirtDnsRecords;
  const total = model.nodes.length + (readsKvm ? 1 : 0);
  const ticker = options.onProgress ? setInterval(report, 1000) : undefined;

  const servers = serversOf(model);
  const upstreamProbeNode = servers[0] ?? model.nodes[0];

  async function read<T>(
    node: NodeSpec,
    check: string,
    text: string,
    params: Record<string, string>,
    parse: (stdout: string) => T,
  ): Promise<Read<T>> {
    const conn: SshConnection = { ...node.ssh, privateKey: options.sshPrivateKey };
    const id = nextId++;
    running.set(id, { host: node.name, check, since: Date.now() });
    try {
      const result = await runScript(conn, text, {
        params,
        connectTimeoutMs: options.connectTimeoutMs ?? 5000,
        timeoutMs: options.scriptTimeoutMs ?? 20000,
      });
      if (result.exitCode !== 0) return { error: failureReason(result) };
      try {
        return { ok: parse(result.stdout) };
      } catch (err) {
        return { error: (err as Error).message };
      }
    } finally {
      running.delete(id);
    }
  }

  async function readHost(node: NodeSpec): Promise<HostFacts> {
    const isManagement = node.cluster === MANAGEMENT_CLUSTER;
    const role = node.roles.includes("server")
      ? "server"
      : node.roles.includes("agent")
        ? "agent"
        : undefined;
    let preparation: Read<ReturnType<typeof parsePreparationFacts>>;
    try {
      preparation = await read(
        node,
        "node preparation",
        script("node-preparation", "prepare-node.sh"),
        nodeScriptParams("read", {
          networkManagerConfig: renderUnmanagedDevicesConfig(
            model.nodePreparation.unmanagedDevices,
          ),
          bringUpKubeIpvs: model.nodePreparation.bringUpKubeIpvs,
          nodeIp: node.ip,
          keepFirewalld: model.nodePreparation.firewalld === "keep",
        }),
        parsePreparationFacts,
      );
    } catch (err) {
      // The connection itself failed (refused, timed out, host key differs): nothing more to read.
      return { node, unreachable: (err as Error).message };
    }
    const guarded = <T>(p: Promise<Read<T>>): Promise<Read<T>> =>
      p.catch((err: Error) => ({ error: err.message }));
    const rke2 =
      isManagement && role
        ? guarded(
            read(
              node,
              "RKE2",
              script("rke2-cluster", "rke2-facts.sh"),
              { ROLE: role, MEMBERS_SCRIPT: script("rke2-cluster", "etcd-members.sh") },
              (out) => parseRke2Facts(out, node.name, role),
            ),
          )
        : undefined;
    const peers = servers.filter((s) => s.name !== node.name);
    const etcdPorts =
      role === "server" && isManagement && peers.length > 0
        ? guarded(
            read(
              node,
              "etcd ports",
              script("node-preparation", "preflight-ports.sh"),
              {
                TARGETS: peers.map((p) => `${p.ip} ${ETCD_PORTS.join(" ")}`).join(";"),
                CONNECT_TIMEOUT: "2",
              },
              parsePortChecks,
            ),
          )
        : undefined;
    const search = model.rancher?.hostname
      ? guarded(
          read(
            node,
            "seed 000: search domains",
            script("cluster-dns", "search-domain-probe.sh"),
            {
              NAME: model.rancher.hostname,
              CLUSTER_DNS: clusterOf(model, node)?.clusterDnsIp ?? "",
            },
            parseSearchProbes,
          ),
        )
      : undefined;
    const upstreams =
      node === upstreamProbeNode && model.dns.upstreamResolvers.length > 0
        ? guarded(
            read(
              node,
              "seed 004: upstream resolvers",
              script("cluster-dns", "preflight-upstreams.sh"),
              { UPSTREAMS: model.dns.upstreamResolvers.join(" ") },
              parseUpstreamProbes,
            ),
          )
        : undefined;
    const joinLog =
      role === "server" && isManagement
        ? guarded(
            read(
              node,
              "RKE2's log",
              script("rke2-cluster", "learner-log.sh"),
              { LINES: "500" },
              parseJoinLog,
            ),
          )
        : undefined;
    const cluster = clusterOf(model, node);
    const dnsEgress =
      cluster &&
      node === firstServerOf(model, node.cluster) &&
      model.dns.policyNamespaces.length > 0
        ? guarded(
            read(
              node,
              "seed 001: DNS egress policies",
              script("cluster-dns", "egress-facts.sh"),
              {
                NAMESPACES: model.dns.policyNamespaces.map((n) => n.name).join(" "),
                RKE2_FACTS_SCRIPT: script("rke2-cluster", "rke2-facts.sh"),
              },
              (out): ClusterEgress => {
                if (out.split("\n").includes("not-running"))
                  throw new Error(
                    `the cluster's API does not answer RKE2's kubectl on ${node.name}`,
                  );
                return {
                  cluster: node.cluster,
                  namespaces: factsFromScript(out, model.dns.policyNamespaces),
                  nodeLocalIp: model.dns.nodeLocal.enabled ? model.dns.nodeLocal.ip : undefined,
                };
              },
            ),
          )
        : undefined;
    const agentLog =
      !isManagement && model.rancher?.hostname
        ? guarded(
            read(
              node,
              "seed 000: cluster agent's log",
              script("rancher-cluster", "cluster-agent-check.sh"),
              { RANCHER_HOST: model.rancher.hostname, LOOKUP: "no", NEEDS_AGENT_LOG: "yes" },
              (out) => parseAgentCheck(out, node.name).logLines,
            ),
          )
        : undefined;
    const loopLogs = guarded(
      read(
        node,
        "seed 004: CoreDNS logs",
        script("cluster-dns", "dns-loop-log.sh"),
        {},
        parseLoopLogs,
      ),
    );
    return {
      node,
      preparation,
      loopLogs: await loopLogs,
      agentLog: await agentLog,
      joinLog: await joinLog,
      dnsEgress: await dnsEgress,
      rke2: await rke2,
      etcdPorts: await etcdPorts,
      search: await search,
      upstreams: await upstreams,
    };
  }

  /** The KVM host's libvirt records, where the stack manages them. */
  async function readKvm(): Promise<KvmFacts | undefined> {
    const ssh = model.libvirt.ssh;
    if (!ssh || !readsKvm) return undefined;
    const host = `libvirt on ${ssh.host}`;
    const kvmNode = { name: host, ip: ssh.host, cluster: "", roles: [], ssh };
    try {
      const records = await read(
        kvmNode,
        "libvirt DNS records",
        script("libvirt-dns", "network.sh"),
        { ACTION: "read", NETWORK: model.libvirt.network },
        parseDnsHosts,
      );
      return { host, records };
    } catch (err) {
      return { host, unreachable: (err as Error).message };
    }
  }

  try {
    const kvmRead = readKvm().finally(() => {
      hostsDone++;
      report();
    });
    const hosts = await Promise.all(
      model.nodes.map((node) =>
        readHost(node).finally(() => {
          hostsDone++;
          report();
        }),
      ),
    );
    const kvm = await kvmRead;
    const { findings, unchecked } = causesOf(model, hosts, kvm);
    return {
      stack: model.stack,
      hosts: total,
      findings,
      unchecked,
      wallMs: Date.now() - started,
    };
  } finally {
    if (ticker) clearInterval(ticker);
  }
}
