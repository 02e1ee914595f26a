import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as rancher2 from "@pulumi/rancher2";
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks";
import type { SshKey } from "../components/ssh/host-step-resource";
import {
  ClusterDns,
  DnsDelivery,
  liveHelmChartConfig,
  UpstreamResolverPreflight,
} from "../components/cluster-dns";
import { dnsKubeletArgs } from "../components/cluster-dns/values";
import { parseRegistryAuth, Rke2Cluster, Rke2ClusterNode } from "../components/rke2-cluster";
import { DnsHostRecord, LibvirtDnsRecords } from "../components/libvirt-dns";
import {
  knownProfile,
  NodePortsPreflight,
  NodePreparations,
  PreparedNode,
  profileSettingOf,
  runsRke2Server,
  ServerPortsPreflight,
  tcpPortsToPeer,
} from "../components/node-preparation";
import { RancherDownstreamCluster } from "../components/rancher-cluster";
import {
  ClusterSettings,
  EnvironmentModel,
  MANAGEMENT_CLUSTER,
  nodesOfCluster,
  RancherSettings,
  SecretKey,
  serversOf,
} from "../components/model";
import { EnvironmentSecrets } from "./config/load";
import { managementStackOutputs, ManagementStackOutputs } from "./config/management-stack";

/** The management cluster as this stack runs RKE2 there (Rke2Cluster's outputs). */
export interface ManagementClusterOutputs {
  readonly name: string;
  readonly version: pulumi.Output<string>;
  /** The servers in join order, each with its address. */
  readonly servers: pulumi.Output<Rke2ClusterNode[]>;
  readonly agents: pulumi.Output<Rke2ClusterNode[]>;
  /** `https://<address>:9345`, where joining servers and agents register. */
  readonly registrationUrl: pulumi.Output<string>;
  /** The admin kubeconfig read from the first server, for `https://<address>:6443`; a secret. */
  readonly kubeconfig: pulumi.Output<string>;
}

export interface EnvironmentOutputs {
  /**
   * What a downstream stack reads through `managementStack`: Rancher's URL, CA and addresses,
   * and the clusters and nodes this stack declares. Only in the stack that owns Rancher.
   */
  readonly rancher?: ManagementStackOutputs;
  /** The `<host>` records this stack keeps on the libvirt network; absent when it keeps none. */
  readonly libvirtDnsRecords?: pulumi.Output<DnsHostRecord[]>;
  /**
   * Per node this stack prepares: true once its firewall services are disabled and its REJECT
   * rules gone. Empty when the stack prepares no node.
   */
  readonly preparedNodes: Record<string, pulumi.Output<boolean>>;
  /** Absent when the stack does not run RKE2 on the management cluster. */
  readonly managementCluster?: ManagementClusterOutputs;
  /** Nodes whose last preparation changed NetworkManager where RKE2 was installed: reboot them. */
  readonly nodesRequiringReboot: pulumi.Output<string[]>;
  /** Management nodes running another release or config.yaml than the stack's, or owing a restart
   * an earlier step could not make: the next pulumi up restarts them, one server at a time. */
  readonly nodesPendingRestart: pulumi.Output<string[]>;
  /** rke2-coredns values per downstream cluster, as Rancher chartValues YAML. */
  readonly downstreamChartValues: Record<string, string>;
  /** Per downstream cluster: Rancher's id; the kubeconfig and registration token (secrets). */
  readonly downstreamClusters: Record<
    string,
    {
      id: pulumi.Output<string>;
      kubeconfig: pulumi.Output<string>;
      registrationToken: pulumi.Output<string>;
    }
  >;
}

/**
 * Declares the estate for one validated model in five steps, each a function below that takes
 * what it needs and returns what the later steps wait for. The order is the one the resources'
 * dependencies give (README, "The estate and the order of operations", draws it, and
 * test/component/program-order.test.ts compares that picture with the recorded graph):
 *   1. the libvirt DNS records on the KVM host; they wait for nothing;
 *   2. node preparation, every node in parallel; with more than one management server, the
 *      server ports preflight on each server, after every server is prepared;
 *   3. the management cluster's DNS fix and the upstream resolver preflight, both after the
 *      first server's preparation (with `rke2.dnsDelivery: helmChartConfig` the fix goes
 *      through the Kubernetes API of a cluster that already runs, and waits for nothing else);
 *   4. the management cluster: its servers one at a time, each after its node's preparation,
 *      the ports preflight and the previous server's join gate, the first one also after the
 *      DNS fix when that is a server manifest (RKE2 applies it when it first starts); then its
 *      agents, in parallel, after the last server's join gate and the same preparation and
 *      preflight;
 *   5. the Rancher downstream clusters: each ClusterV2 after the DNS records and the management
 *      cluster's last join gate (Rancher runs there and is reached by those records); each node
 *      registers after those, the ClusterV2 and its own preparation, in the order
 *      RancherDownstreamCluster gives.
 * A step that the stack's `deploy` selection turns off declares nothing, and the later steps do
 * not wait for it.
 */
export function deployEnvironment(
  model: EnvironmentModel,
  secrets: EnvironmentSecrets,
  scope: DeclarationScope = STACK_SCOPE,
  sshKeyConfig?: string,
): EnvironmentOutputs {
  const keys = withEmptySecrets(secrets, sshKeyConfig);
  const records = declareLibvirtDnsRecords(model, keys, scope); // 1.
  const prepared = prepareNodes(model, keys, scope); // 2.
  const beforeFirstStart = deliverManagementClusterDns(model, keys, prepared, scope); // 3.
  const management = joinManagementCluster(model, keys, prepared, beforeFirstStart, scope); // 4.
  const rancherReady = [...(records ? [records] : []), ...management.ready];
  const downstream = deployDownstreamClusters(model, keys, prepared, rancherReady, scope); // 5.
  const rancher = managementStackOutputs(model);
  return {
    ...(rancher ? { rancher } : {}),
    ...(records ? { libvirtDnsRecords: records.records } : {}),
    preparedNodes: Object.fromEntries(
      [...prepared.byNode].map(([node, preparation]) => [node, preparation.firewallReady]),
    ),
    nodesRequiringReboot: prepared.nodesRequiringReboot,
    ...(management.cluster ? { managementCluster: management.cluster } : {}),
    nodesPendingRestart: management.nodesPendingRestart,
    ...downstream,
  };
}

/**
 * Where the estate's resources are declared: at the top of the stack (the stack-config program,
 * whose resource names existing state holds), or inside a component (infra/estate.ts
 * `Rke2Estate`), whose children take its name as a prefix so two estates in one program differ.
 */
export interface DeclarationScope {
  readonly parent?: pulumi.Resource;
  /** Prepended to every resource name the estate declares; "" at the top of the stack. */
  readonly namePrefix: string;
}

/** The stack-config program's scope: top-level resources under their own names. */
export const STACK_SCOPE: DeclarationScope = { namePrefix: "" };

/** A resource's name in a scope. */
function nameIn(scope: DeclarationScope, name: string): string {
  return `${scope.namePrefix}${name}`;
}

/** A resource's options in a scope: `opts` with the scope's parent, if it has one. */
function optsIn<O extends pulumi.ResourceOptions>(scope: DeclarationScope, opts: O): O {
  return scope.parent ? { ...opts, parent: scope.parent } : opts;
}

/**
 * The secrets the steps pass on; one the stack lacks is an empty secret (previews run without).
 * The SSH key carries the config key its providers read it from, when that is not
 * `sshPrivateKey`.
 */
type StepSecrets = Readonly<Record<Exclude<SecretKey, "sshPrivateKey">, pulumi.Output<string>>> & {
  readonly sshPrivateKey: SshKey;
};

function withEmptySecrets(secrets: EnvironmentSecrets, sshKeyConfig?: string): StepSecrets {
  const sshPrivateKey = secrets.sshPrivateKey ?? pulumi.secret("");
  return {
    sshPrivateKey:
      sshKeyConfig === undefined
        ? sshPrivateKey
        : { value: sshPrivateKey, configKey: sshKeyConfig },
    rke2Token: secrets.rke2Token ?? pulumi.secret(""),
    rancherToken: secrets.rancherToken ?? pulumi.secret(""),
    kubeconfig: secrets.kubeconfig ?? pulumi.secret(""),
    registryAuth: secrets.registryAuth ?? pulumi.secret("{}"),
  };
}

/** Step 1: the libvirt DNS records, when the stack manages them. */
function declareLibvirtDnsRecords(
  model: EnvironmentModel,
  secrets: StepSecrets,
  scope: DeclarationScope,
): LibvirtDnsRecords | undefined {
  if (!model.deploy.libvirtDnsRecords) return undefined;
  const { ssh } = model.libvirt;
  // Validation requires the KVM host where the stack manages its records (deploy-parts.ts).
  if (!ssh) throw new Error("deploy.libvirtDnsRecords is on, but the model has no libvirt.ssh");
  return new LibvirtDnsRecords(
    nameIn(scope, "libvirt-dns"),
    {
      ssh,
      sshPrivateKey: secrets.sshPrivateKey,
      network: model.libvirt.network,
      subnet: model.libvirt.subnet,
      rancherHostname: model.rancher?.hostname,
      neutralizedSearchDomains: model.dns.neutralizedSearchDomains,
      dhcpDomain: model.libvirt.dhcpDomain,
      records: model.libvirt.dnsRecords,
      removeStaleRecords: model.libvirt.removeStaleRecords,
    },
    optsIn(scope, {}),
  );
}

/** What step 2 leaves for the later steps; empty when the stack does not prepare nodes. */
interface PreparedNodes {
  /** Each node's preparation, by node name, in the stack's node order. */
  readonly byNode: ReadonlyMap<string, PreparedNode>;
  /** The prepared nodes whose last apply asks for a reboot. */
  readonly nodesRequiringReboot: pulumi.Output<string[]>;
  /**
   * The ports preflights the management cluster's RKE2 waits for: each server's towards the
   * other servers (none with a single server), or with firewalld kept every node's.
   */
  readonly portsPreflights: readonly pulumi.Resource[];
  /** With firewalld kept: each node's ports preflight towards the peers of its cluster, by node name. */
  readonly nodePreflights: ReadonlyMap<string, NodePortsPreflight>;
}

/**
 * The preparation of one node, as a list to wait for (empty when nodes are not prepared), with
 * its own ports preflight when firewalld is kept.
 */
function preparationOf(prepared: PreparedNodes, node: string): pulumi.Resource[] {
  const preparation = prepared.byNode.get(node);
  const preflight = prepared.nodePreflights.get(node);
  return [...(preparation ? [preparation.step] : []), ...(preflight ? [preflight] : [])];
}

/** Step 2: every node's preparation, then the server ports preflight between the servers. */
function prepareNodes(
  model: EnvironmentModel,
  secrets: StepSecrets,
  scope: DeclarationScope,
): PreparedNodes {
  const { sshPrivateKey } = secrets;
  if (!model.deploy.nodePreparation || model.nodes.length === 0)
    return {
      byNode: new Map(),
      nodesRequiringReboot: pulumi.output([]),
      portsPreflights: [],
      nodePreflights: new Map(),
    };
  const clusters = [model.management, ...(model.rancher?.downstreamClusters ?? [])];
  // Each node's host step is named prepare-<node>-host, as under the per-node components before.
  const preparations = new NodePreparations(
    nameIn(scope, "prepare"),
    {
      nodes: model.nodes.map((node) => {
        const cluster = clusters.find((c) => c.name === node.cluster) ?? model.management;
        return {
          node,
          sshPrivateKey,
          unmanagedDevices: model.nodePreparation.unmanagedDevices,
          bringUpKubeIpvs: model.nodePreparation.bringUpKubeIpvs,
          keepFirewalld: model.nodePreparation.firewalld === "keep",
          cni: cluster.cni,
          kubeProxyMode: cluster.kubeProxyMode,
          rke2Profile: knownProfile(profileSettingOf(cluster, node)),
        };
      }),
    },
    optsIn(scope, {}),
  );
  const { byNode, nodesRequiringReboot } = preparations;
  if (model.nodePreparation.firewalld === "keep") {
    const nodePreflights = keptFirewallPreflights(model, clusters, byNode, sshPrivateKey, scope);
    const management = serversOf(model).length > 0 ? model.management.name : undefined;
    const portsPreflights = model.nodes
      .filter((n) => n.cluster === management)
      .map((n) => nodePreflights.get(n.name)!);
    return { byNode, nodesRequiringReboot, portsPreflights, nodePreflights };
  }
  // Live-state preflight: every server reaches every other one on the RKE2 ports.
  const servers = serversOf(model);
  const serverPreparations = servers.map((s) => byNode.get(s.name)!.step);
  const portsPreflights = (servers.length > 1 ? servers : []).map(
    (server) =>
      new ServerPortsPreflight(
        nameIn(scope, `preflight-${server.name}`),
        { server, peers: servers.filter((p) => p !== server), sshPrivateKey },
        optsIn(scope, { dependsOn: serverPreparations }),
      ),
  );
  return { byNode, nodesRequiringReboot, portsPreflights, nodePreflights: new Map() };
}

/**
 * With firewalld kept, its zones are the operators', so every node checks, after its cluster's
 * preparation, that it reaches each peer of its cluster on the TCP ports RKE2 and the CNI need
 * there (components/node-preparation/ports.ts); the servers' etcd ports are among them.
 */
function keptFirewallPreflights(
  model: EnvironmentModel,
  clusters: readonly ClusterSettings[],
  byNode: ReadonlyMap<string, PreparedNode>,
  sshPrivateKey: SshKey,
  scope: DeclarationScope,
): Map<string, NodePortsPreflight> {
  const preflights = new Map<string, NodePortsPreflight>();
  for (const cluster of clusters) {
    const nodes = model.nodes.filter((n) => n.cluster === cluster.name);
    const preparations = nodes.map((n) => byNode.get(n.name)!.step);
    for (const node of nodes) {
      const targets = nodes
        .filter((peer) => peer !== node)
        .map((peer) => ({
          peer,
          ports: tcpPortsToPeer(
            cluster.cni,
            runsRke2Server(node.roles),
            runsRke2Server(peer.roles),
          ),
        }));
      preflights.set(
        node.name,
        new NodePortsPreflight(
          nameIn(scope, `ports-${node.name}`),
          { node, targets, sshPrivateKey },
          optsIn(scope, { dependsOn: preparations }),
        ),
      );
    }
  }
  return preflights;
}

/** Whether the program runs under the SDK's mock monitor (the offline commands and tests). */
function underMocks(): boolean {
  return pulumi.runtime.getMonitor() instanceof MockMonitor;
}

/**
 * Step 3: the management cluster's DNS fix and the upstream resolver preflight, on the first
 * server after its preparation. Returns what RKE2's first start on that server waits for: the
 * fix when it is a server manifest, which RKE2 applies when it starts.
 */
function deliverManagementClusterDns(
  model: EnvironmentModel,
  secrets: StepSecrets,
  prepared: PreparedNodes,
  scope: DeclarationScope,
): pulumi.Resource[] {
  const [firstServer] = serversOf(model);
  if (!model.deploy.clusterDns || !firstServer) return [];
  const { sshPrivateKey } = secrets;
  const afterPreparation = preparationOf(prepared, firstServer.name);
  const delivery: DnsDelivery =
    model.management.dnsDelivery === "helmChartConfig"
      ? {
          kind: "helmChartConfig",
          provider: new k8s.Provider(
            nameIn(scope, "management-cluster"),
            { kubeconfig: secrets.kubeconfig },
            optsIn(scope, {}),
          ),
          kubeconfig: secrets.kubeconfig ?? "",
          // Offline (verify, render, the mock runtime's tests) no cluster is read.
          ...(underMocks()
            ? {}
            : { live: liveHelmChartConfig(secrets.kubeconfig ?? "", model.management.name) }),
        }
      : { kind: "serverManifest", server: firstServer, servers: serversOf(model), sshPrivateKey };
  const fix = new ClusterDns(
    nameIn(scope, `dns-${model.management.name}`),
    { cluster: model.management, dns: model.dns, delivery },
    optsIn(scope, { dependsOn: afterPreparation }),
  );
  new UpstreamResolverPreflight(
    nameIn(scope, "upstream-resolvers"),
    { node: firstServer, sshPrivateKey, upstreams: model.dns.upstreamResolvers },
    optsIn(scope, { dependsOn: afterPreparation }),
  );
  return delivery.kind === "serverManifest" ? [fix] : [];
}

/**
 * Step 4: RKE2 on the management cluster's nodes, servers one at a time and then the agents
 * (Rke2Cluster orders them). Every node waits for its preparation and the ports preflight, the
 * first server also for `beforeFirstStart`. Returns what a client of the cluster waits for: the
 * last server's join gate (nothing when the stack does not run RKE2 there), the nodes that
 * still owe a restart, and the cluster's outputs.
 */
function joinManagementCluster(
  model: EnvironmentModel,
  secrets: StepSecrets,
  prepared: PreparedNodes,
  beforeFirstStart: readonly pulumi.Resource[],
  scope: DeclarationScope,
): {
  ready: pulumi.Resource[];
  nodesPendingRestart: pulumi.Output<string[]>;
  cluster?: ManagementClusterOutputs;
} {
  const servers = serversOf(model);
  const [firstServer] = servers;
  if (!model.deploy.rke2Servers || !firstServer)
    return { ready: [], nodesPendingRestart: pulumi.output([]) };
  const managementNodes = model.nodes.filter((n) => n.cluster === MANAGEMENT_CLUSTER);
  const prerequisites = new Map(
    managementNodes.map((node) => [
      node.name,
      [
        ...preparationOf(prepared, node.name),
        ...prepared.portsPreflights,
        ...(node === firstServer ? beforeFirstStart : []),
      ],
    ]),
  );
  const management = new Rke2Cluster(
    nameIn(scope, model.management.name),
    {
      cluster: model.management,
      servers,
      agents: managementNodes.filter((n) => n.roles.includes("agent")),
      token: secrets.rke2Token,
      sshPrivateKey: secrets.sshPrivateKey,
      kubeletArgs: dnsKubeletArgs(model.dns, model.management),
      installCommand: model.management.installCommand,
      ...(model.management.artifacts ? { artifacts: model.management.artifacts } : {}),
      gateTimeoutSeconds: model.management.joinGate.timeoutSeconds,
      gatePollSeconds: model.management.joinGate.pollSeconds,
      serverJoin: model.management.serverJoin,
      ...(model.management.drain.enabled
        ? {
            drain: {
              timeoutSeconds: model.management.drain.timeoutSeconds,
              podSelector: model.management.drain.podSelector,
            },
          }
        : {}),
      agentsMaxUnavailable: model.management.agentsMaxUnavailable,
      prerequisites,
      ...(model.management.registries
        ? {
            registries: {
              spec: model.management.registries,
              auth: secrets.registryAuth.apply(parseRegistryAuth),
            },
          }
        : {}),
    },
    optsIn(scope, {}),
  );
  return {
    ready: management.gates.slice(-1),
    nodesPendingRestart: management.nodesPendingRestart,
    cluster: {
      name: model.management.name,
      version: management.version,
      servers: management.servers,
      agents: management.agents,
      registrationUrl: management.registrationUrl,
      kubeconfig: management.kubeconfig,
    },
  };
}

/**
 * Step 5: the DNS values of every downstream cluster and, when selected, the clusters
 * themselves: Rancher's API is used after `rancherReady` (Rancher's DNS records and the
 * management cluster it runs on, when this stack builds them), and each node registers after
 * those and its own preparation.
 */
function deployDownstreamClusters(
  model: EnvironmentModel,
  secrets: StepSecrets,
  prepared: PreparedNodes,
  rancherReady: pulumi.Resource[],
  scope: DeclarationScope,
): Pick<EnvironmentOutputs, "downstreamChartValues" | "downstreamClusters"> {
  const outputs: Pick<EnvironmentOutputs, "downstreamChartValues" | "downstreamClusters"> = {
    downstreamChartValues: {},
    downstreamClusters: {},
  };
  const rancher = model.rancher;
  if (!rancher || !(model.deploy.clusterDns || model.deploy.rancherClusters)) return outputs;
  const registrar = model.deploy.rancherClusters ? rancherEndpoint(rancher) : undefined;
  const provider = registrar
    ? new rancher2.Provider(
        nameIn(scope, "rancher"),
        { apiUrl: registrar.url, tokenKey: secrets.rancherToken, caCerts: rancher.caCertificate },
        optsIn(scope, {}),
      )
    : undefined;
  for (const cluster of rancher.downstreamClusters) {
    const dns = new ClusterDns(
      nameIn(scope, `dns-${cluster.name}`),
      { cluster, dns: model.dns, delivery: { kind: "rancherChartValues" } },
      optsIn(scope, {}),
    );
    outputs.downstreamChartValues[cluster.name] = dns.chartValues;
    if (!provider || !registrar) continue;
    const nodes = nodesOfCluster(model, cluster.name);
    const kubeletArgs = dnsKubeletArgs(model.dns, cluster);
    // Pods' nameserver is the kubelet's cluster-dns: the node-local cache's address when set.
    const podNameserver =
      kubeletArgs.find((a) => a.startsWith("cluster-dns="))?.slice("cluster-dns=".length) ??
      cluster.clusterDnsIp;
    const downstream = new RancherDownstreamCluster(
      nameIn(scope, `rancher-${cluster.name}`),
      {
        cluster,
        nodes,
        chartValues: dns.chartValues,
        kubeletArgs,
        caCertificate: rancher.caCertificate,
        rancherHost: registrar.hostname,
        rancherUrl: registrar.url,
        apiToken: secrets.rancherToken,
        podNameserver,
        provider,
        rancherReady,
        sshPrivateKey: secrets.sshPrivateKey,
        prerequisites: new Map(
          nodes.map((n) => [n.name, [...preparationOf(prepared, n.name), ...rancherReady]]),
        ),
      },
      optsIn(scope, {}),
    );
    outputs.downstreamClusters[cluster.name] = {
      id: downstream.clusterId,
      kubeconfig: downstream.kubeconfig,
      registrationToken: downstream.registrationToken,
    };
  }
  return outputs;
}

/** Rancher's URL and host, which validation requires where the stack registers clusters. */
function rancherEndpoint(rancher: RancherSettings): { url: string; hostname: string } {
  const { url, hostname } = rancher;
  if (url === undefined || hostname === undefined) {
    throw new Error("deploy.rancherClusters is on, but the model has no rancher.url");
  }
  return { url, hostname };
}
