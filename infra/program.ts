import * as pulumi from "@pulumi/pulumi";
import { LibvirtDnsRecords } from "../components/libvirt-dns";
import { NodePreparation, ServerPortsPreflight } from "../components/node-preparation";
import { EnvironmentModel, serversOf } from "./config/model";
import { EnvironmentSecrets } from "./config/load";

export interface EnvironmentOutputs {
  readonly libvirtDnsRecords?: pulumi.Output<unknown>;
  readonly preparedNodes: Record<string, pulumi.Output<boolean>>;
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
  } = {
    preparedNodes: {},
  };

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
  return outputs;
}
