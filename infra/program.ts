import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as rancher2 from "@pulumi/rancher2";
import { ClusterDns, DnsDelivery, UpstreamResolverPreflight } from "../components/cluster-dns";
import { dnsKubeletArgs } from "../components/cluster-dns/values";
import { Rke2Cluster } from "../components/rke2-cluster";
import { LibvirtDnsRecords } from "../components/libvirt-dns";
import {
  NodePreparation,
  nodesRequiringReboot,
  ServerPortsPreflight,
} from "../components/node-preparation";
import { RancherDownstreamCluster } from "../components/rancher-cluster";
import {
  EnvironmentModel,
  MANAGEMENT_CLUSTER,
  nodesOfCluster,
  RancherSettings,
  serversOf,
} from "../components/model";
import { EnvironmentSecrets } from "./config/load";

export interface EnvironmentOutputs {
  readonly libvirtDnsRecords?: pulumi.Output<unknown>;
  readonly preparedNodes: Record<string, pulumi.Output<boolean>>;
  /** Nodes whose last preparation changed NetworkManager where RKE2 was installed: reboot them. */
  readonly nodesRequiringReboot: pulumi.Output<string[]>;
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
 * Declares the estate for one validated model. Order of operations, as dependencies:
 *   1. libvirt DNS records and node preparation (independent, nodes in parallel);
 *   2. RKE2 servers, one at a time, each after its node's preparation;
 *   3. cluster DNS;
 *   4. Rancher downstream clusters, each node registered after its preparation, the records and
 *      the management cluster's last join gate (Rancher runs there).
 */
export function deployEnvironment(
  model: EnvironmentModel,
  secrets: EnvironmentSecrets,
): EnvironmentOutputs {
  const sshPrivateKey = secrets.sshPrivateKey ?? pulumi.secret("");
  const outputs: {
    libvirtDnsRecords?: pulumi.Output<unknown>;
    preparedNodes: Record<string, pulumi.Output<boolean>>;
    nodesRequiringReboot: pulumi.Output<string[]>;
    downstreamChartValues: Record<string, string>;
    downstreamClusters: EnvironmentOutputs["downstreamClusters"];
  } = {
    preparedNodes: {},
    nodesRequiringReboot: pulumi.output([]),
    downstreamChartValues: {},
    downstreamClusters: {},
  };

  let records: LibvirtDnsRecords | undefined;
  if (model.deploy.libvirtDnsRecords) {
    records = new LibvirtDnsRecords("libvirt-dns", {
      ssh: model.libvirt.ssh,
      sshPrivateKey,
      network: model.libvirt.network,
      subnet: model.libvirt.subnet,
      rancherHostname: model.rancher?.hostname,
      neutralizedSearchDomains: model.dns.neutralizedSearchDomains,
      dhcpDomain: model.libvirt.dhcpDomain,
      records: model.libvirt.dnsRecords,
    });
    outputs.libvirtDnsRecords = records.records;
  }

  const preparations = new Map<string, NodePreparation>();
  const portPreflights: ServerPortsPreflight[] = [];
  if (model.deploy.nodePreparation) {
    const clusters = [model.management, ...(model.rancher?.downstreamClusters ?? [])];
    for (const node of model.nodes) {
      const cluster = clusters.find((c) => c.name === node.cluster) ?? model.management;
      const prepared = new NodePreparation(`prepare-${node.name}`, {
        node,
        sshPrivateKey,
        unmanagedDevices: model.nodePreparation.unmanagedDevices,
        bringUpKubeIpvs: model.nodePreparation.bringUpKubeIpvs,
        cni: cluster.cni,
        kubeProxyMode: cluster.kubeProxyMode,
      });
      outputs.preparedNodes[node.name] = prepared.firewallReady;
      preparations.set(node.name, prepared);
    }
    outputs.nodesRequiringReboot = nodesRequiringReboot([...preparations.values()]);
    // Live-state preflight: every server reaches every other one on the RKE2 ports.
    const servers = serversOf(model);
    const serverPreparations = servers.map((s) => preparations.get(s.name)!);
    for (const server of servers.length > 1 ? servers : []) {
      const preflight = new ServerPortsPreflight(
        `preflight-${server.name}`,
        { server, peers: servers.filter((p) => p !== server), sshPrivateKey },
        { dependsOn: serverPreparations },
      );
      portPreflights.push(preflight);
    }
  }
  const [firstServer] = serversOf(model);
  let managementDns: ClusterDns | undefined;
  if (model.deploy.clusterDns && firstServer) {
    const afterPreparation = preparations.has(firstServer.name)
      ? [preparations.get(firstServer.name)!]
      : [];
    const delivery: DnsDelivery =
      model.management.dnsDelivery === "helmChartConfig"
        ? {
            kind: "helmChartConfig",
            provider: new k8s.Provider("management-cluster", {
              kubeconfig: secrets.kubeconfig ?? pulumi.secret(""),
            }),
          }
        : { kind: "serverManifest", server: firstServer, sshPrivateKey };
    managementDns = new ClusterDns(
      `dns-${model.management.name}`,
      { cluster: model.management, dns: model.dns, delivery },
      { dependsOn: afterPreparation },
    );
    new UpstreamResolverPreflight(
      "upstream-resolvers",
      { node: firstServer, sshPrivateKey, upstreams: model.dns.upstreamResolvers },
      { dependsOn: afterPreparation },
    );
  }
  let management: Rke2Cluster | undefined;
  if (model.deploy.rke2Servers && firstServer) {
    // Each server waits for its preparation and for the server ports preflight; the first one
    // also for the DNS manifest, which must be in place before RKE2 first starts.
    const prerequisites = new Map<string, pulumi.Resource[]>();
    for (const node of model.nodes.filter((n) => n.cluster === MANAGEMENT_CLUSTER)) {
      const prep = preparations.get(node.name);
      prerequisites.set(node.name, [...(prep ? [prep] : []), ...portPreflights]);
    }
    if (managementDns && model.management.dnsDelivery === "serverManifest") {
      prerequisites.get(firstServer.name)!.push(managementDns);
    }
    management = new Rke2Cluster(model.management.name, {
      cluster: model.management,
      servers: serversOf(model),
      agents: model.nodes.filter(
        (n) => n.cluster === MANAGEMENT_CLUSTER && n.roles.includes("agent"),
      ),
      token: secrets.rke2Token ?? pulumi.secret(""),
      sshPrivateKey,
      kubeletArgs: dnsKubeletArgs(model.dns, model.management),
      installCommand: model.management.installCommand,
      gateTimeoutSeconds: model.management.joinGate.timeoutSeconds,
      gatePollSeconds: model.management.joinGate.pollSeconds,
      serverJoin: model.management.serverJoin,
      prerequisites,
    });
  }
  if (model.rancher && (model.deploy.clusterDns || model.deploy.rancherClusters)) {
    // Rancher runs on the management cluster and is reached by its DNS records: when this
    // stack builds them, Rancher's API is used and nodes register only after them.
    const rancherReady = [...(records ? [records] : []), ...(management?.gates.slice(-1) ?? [])];
    deployDownstreamClusters(model, model.rancher, secrets, outputs, rancherReady, (node) => [
      ...(preparations.has(node) ? [preparations.get(node)!] : []),
      ...rancherReady,
    ]);
  }
  return outputs;
}

/** The DNS values of every downstream cluster and, when selected, the clusters themselves. */
function deployDownstreamClusters(
  model: EnvironmentModel,
  rancher: RancherSettings,
  secrets: EnvironmentSecrets,
  outputs: Pick<EnvironmentOutputs, "downstreamChartValues" | "downstreamClusters">,
  rancherReady: pulumi.Resource[],
  prerequisitesOf: (node: string) => pulumi.Resource[],
): void {
  const provider = model.deploy.rancherClusters
    ? new rancher2.Provider("rancher", {
        apiUrl: rancher.url,
        tokenKey: secrets.rancherToken ?? pulumi.secret(""),
        caCerts: rancher.caCertificate,
      })
    : undefined;
  for (const cluster of rancher.downstreamClusters) {
    const dns = new ClusterDns(`dns-${cluster.name}`, {
      cluster,
      dns: model.dns,
      delivery: { kind: "rancherChartValues" },
    });
    outputs.downstreamChartValues[cluster.name] = dns.chartValues;
    if (!provider) continue;
    const nodes = nodesOfCluster(model, cluster.name);
    const kubeletArgs = dnsKubeletArgs(model.dns, cluster);
    // Pods' nameserver is the kubelet's cluster-dns: the node-local cache's address when set.
    const podNameserver =
      kubeletArgs.find((a) => a.startsWith("cluster-dns="))?.slice("cluster-dns=".length) ??
      cluster.clusterDnsIp;
    const downstream = new RancherDownstreamCluster(`rancher-${cluster.name}`, {
      cluster,
      nodes,
      chartValues: dns.chartValues,
      kubeletArgs,
      caCertificate: rancher.caCertificate,
      rancherHost: rancher.hostname,
      rancherUrl: rancher.url,
      apiToken: secrets.rancherToken ?? pulumi.secret(""),
      podNameserver,
      provider,
      rancherReady,
      sshPrivateKey: secrets.sshPrivateKey ?? pulumi.secret(""),
      prerequisites: new Map(nodes.map((n) => [n.name, prerequisitesOf(n.name)])),
    });
    outputs.downstreamClusters[cluster.name] = {
      id: downstream.clusterId,
      kubeconfig: downstream.kubeconfig,
      registrationToken: downstream.registrationToken,
    };
  }
}
