import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ClusterDns, DnsDelivery, UpstreamResolverPreflight } from "../components/cluster-dns";
import { LibvirtDnsRecords } from "../components/libvirt-dns";
import { NodePreparation, ServerPortsPreflight } from "../components/node-preparation";
import { EnvironmentModel, serversOf } from "./config/model";
import { EnvironmentSecrets } from "./config/load";

export interface EnvironmentOutputs {
  readonly libvirtDnsRecords?: pulumi.Output<unknown>;
  readonly preparedNodes: Record<string, pulumi.Output<boolean>>;
  /** rke2-coredns values per downstream cluster, as Rancher chartValues YAML. */
  readonly downstreamChartValues: Record<string, string>;
}

/**
 * Declares the estate for one validated model. Order of operations, as dependencies:
 *   1. libvirt DNS records and node preparation (independent, nodes in parallel);
 *   2. RKE2 servers, one at a time, each after its node's preparation;
 *   3. cluster DNS and Rancher downstream clusters.
 */
export function deployEnvironment(
  model: EnvironmentModel,
  secrets: EnvironmentSecrets,
): EnvironmentOutputs {
  const sshPrivateKey = secrets.sshPrivateKey ?? pulumi.secret("");
  const outputs: {
    libvirtDnsRecords?: pulumi.Output<unknown>;
    preparedNodes: Record<string, pulumi.Output<boolean>>;
    downstreamChartValues: Record<string, string>;
  } = { preparedNodes: {}, downstreamChartValues: {} };

  if (model.deploy.libvirtDnsRecords) {
    const records = new LibvirtDnsRecords("libvirt-dns", {
      ssh: model.libvirt.ssh,
      sshPrivateKey,
      network: model.libvirt.network,
      subnet: model.libvirt.subnet,
      rancherHostname: model.rancher?.hostname,
      neutralizedSearchDomains: model.dns.neutralizedSearchDomains,
      records: model.libvirt.dnsRecords,
    });
    outputs.libvirtDnsRecords = records.records;
  }

  const preparations = new Map<string, NodePreparation>();
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
    // Live-state preflight: every server reaches every other one on the RKE2 ports.
    const servers = serversOf(model);
    const serverPreparations = servers.map((s) => preparations.get(s.name)!);
    for (const server of servers.length > 1 ? servers : []) {
      new ServerPortsPreflight(
        `preflight-${server.name}`,
        { server, peers: servers.filter((p) => p !== server), sshPrivateKey },
        { dependsOn: serverPreparations },
      );
    }
  }
  const [firstServer] = serversOf(model);
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
    new ClusterDns(
      `dns-${model.management.name}`,
      { cluster: model.management, dns: model.dns, delivery },
      { dependsOn: afterPreparation },
    );
    for (const cluster of model.rancher?.downstreamClusters ?? []) {
      const dns = new ClusterDns(`dns-${cluster.name}`, {
        cluster,
        dns: model.dns,
        delivery: { kind: "rancherChartValues" },
      });
      outputs.downstreamChartValues[cluster.name] = dns.chartValues;
    }
    new UpstreamResolverPreflight(
      "upstream-resolvers",
      { node: firstServer, sshPrivateKey, upstreams: model.dns.upstreamResolvers },
      { dependsOn: afterPreparation },
    );
  }
  return outputs;
}
