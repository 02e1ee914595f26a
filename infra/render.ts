import { renderChartCorefile, renderChartNodeLocalCorefile } from "../components/cluster-dns/chart";
import { corednsChartOf } from "../components/cluster-dns/chart-releases";
import {
  dnsEgressNetworkPolicyObject,
  helmChartConfigObject,
  renderManifest,
  renderRancherChartValues,
} from "../components/cluster-dns/manifests";
import {
  clusterDnsChartValues,
  dnsKubeletArgs,
  renderChartValuesYaml,
} from "../components/cluster-dns/values";
import { dnsHostRecords, renderDnsHostXml } from "../components/libvirt-dns/render";
import {
  registrationAddressOf,
  renderRke2AgentConfig,
  renderRke2ServerConfig,
} from "../components/rke2-cluster/config";
import { componentFile } from "../components/assets";
import {
  nodeScriptParams,
  renderUnmanagedDevicesConfig,
} from "../components/node-preparation/render";
import { scriptWithParams } from "../components/ssh/run-script";
import * as path from "path";
import {
  rancherCaChecksum,
  registrationPlanDocument,
} from "../components/rancher-cluster/registration";
import { renderRkeConfigText } from "../components/rancher-cluster/rke-config";
import {
  ClusterSettings,
  DownstreamClusterSpec,
  EnvironmentModel,
  MANAGEMENT_CLUSTER,
  serversOf,
} from "../components/model";

export type ArtifactKind =
  | "libvirt-dns-host-xml"
  | "rke2-server-config"
  | "rke2-agent-config"
  | "rke2-restart-plan"
  | "coredns-chart-values"
  | "coredns-corefile"
  | "nodelocal-corefile"
  | "helmchartconfig"
  | "networkpolicy"
  | "node-preparation-script"
  | "rancher-machine-global-config"
  | "rancher-machine-selector-config"
  | "rancher-chart-values"
  | "rancher-registration-plan";

/** One file the stack puts on a host or into a cluster, as `render` writes it for review. */
export interface Artifact {
  readonly kind: ArtifactKind;
  /** Host, network or cluster the artifact goes to. */
  readonly target: string;
  /** Path below the output directory. */
  readonly path: string;
  /** The cluster it belongs to, where it belongs to one. */
  readonly cluster?: string;
  readonly content: string;
  readonly mode?: number;
}

/** Stands where a secret goes; `render` output is for review and never holds secrets. */
export const REDACTED = "<redacted: Pulumi secret>";

export function renderArtifacts(model: EnvironmentModel): Artifact[] {
  const artifacts: Artifact[] = [];
  const { libvirt } = model;
  artifacts.push({
    kind: "libvirt-dns-host-xml",
    target: `${libvirt.ssh.host} network ${libvirt.network}`,
    path: "libvirt/dns-hosts.xml",
    content: dnsHostRecords(libvirt.dnsRecords).map(renderDnsHostXml).join("\n") + "\n",
  });

  const prepareScript = componentFile(
    path.join(__dirname, "..", "components", "node-preparation"),
    "prepare-node.sh",
  );
  for (const node of model.nodes) {
    const params = nodeScriptParams("apply", {
      networkManagerConfig: renderUnmanagedDevicesConfig(model.nodePreparation.unmanagedDevices),
      bringUpKubeIpvs: model.nodePreparation.bringUpKubeIpvs,
    });
    artifacts.push({
      kind: "node-preparation-script",
      target: node.name,
      cluster: node.cluster,
      path: `nodes/${node.name}/prepare-node.sh`,
      content: scriptWithParams(prepareScript, params),
      mode: 0o755,
    });
  }

  const servers = serversOf(model);
  const kubeletArgs = dnsKubeletArgs(model.dns, model.management);
  servers.forEach((node, i) => {
    artifacts.push({
      kind: "rke2-server-config",
      target: node.name,
      cluster: model.management.name,
      path: `rke2/${node.name}/config.yaml`,
      content: renderRke2ServerConfig({
        cluster: model.management,
        node,
        joinAddress: i === 0 ? undefined : registrationAddressOf(model.management, servers[0]),
        token: REDACTED,
        kubeletArgs,
      }),
      mode: 0o600,
    });
  });
  const agents = model.nodes.filter(
    (n) => n.cluster === MANAGEMENT_CLUSTER && n.roles.includes("agent"),
  );
  if (servers.length > 0) {
    for (const node of agents) {
      artifacts.push({
        kind: "rke2-agent-config",
        target: node.name,
        cluster: model.management.name,
        path: `rke2/${node.name}/config.yaml`,
        content: renderRke2AgentConfig({
          cluster: model.management,
          node,
          serverAddress: registrationAddressOf(model.management, servers[0]),
          token: REDACTED,
          kubeletArgs,
        }),
        mode: 0o600,
      });
    }
  }

  const clusters: ClusterSettings[] = [
    model.management,
    ...(model.rancher?.downstreamClusters ?? []),
  ];
  for (const cluster of clusters) {
    artifacts.push(...clusterDnsArtifacts(model, cluster));
  }
  for (const cluster of model.rancher?.downstreamClusters ?? []) {
    artifacts.push(...rkeConfigArtifacts(model, cluster));
    artifacts.push(registrationPlanArtifact(model, cluster));
  }
  return artifacts;
}

/** The text pieces of a downstream ClusterV2's rkeConfig, exactly as the program sends them. */
function rkeConfigArtifacts(model: EnvironmentModel, cluster: DownstreamClusterSpec): Artifact[] {
  const chartValues = renderRancherChartValues(clusterDnsChartValues(model.dns, cluster));
  const rke = renderRkeConfigText(cluster, dnsKubeletArgs(model.dns, cluster), chartValues);
  const common = { target: cluster.name, cluster: cluster.name };
  const dir = `rancher/${cluster.name}`;
  const artifacts: Artifact[] = [
    {
      ...common,
      kind: "rancher-machine-global-config",
      path: `${dir}/machine-global-config.yaml`,
      content: rke.machineGlobalConfig,
    },
    {
      ...common,
      kind: "rancher-chart-values",
      path: `${dir}/chart-values.yaml`,
      content: rke.chartValues,
    },
  ];
  if (rke.machineSelectorConfig !== undefined) {
    artifacts.push({
      ...common,
      kind: "rancher-machine-selector-config",
      path: `${dir}/machine-selector-config.yaml`,
      content: rke.machineSelectorConfig,
    });
  }
  return artifacts;
}

/**
 * The order the cluster's nodes register in and what each step waits for, plus the CA checksum
 * Rancher's node command must carry (`rancherCaChecksum`: Rancher's rule).
 */
function registrationPlanArtifact(
  model: EnvironmentModel,
  cluster: DownstreamClusterSpec,
): Artifact {
  const nodes = model.nodes.filter((n) => n.cluster === cluster.name);
  const ca = model.rancher?.caCertificate;
  const doc = registrationPlanDocument(
    cluster.name,
    nodes,
    ca === undefined ? undefined : rancherCaChecksum(ca),
  );
  return {
    kind: "rancher-registration-plan",
    target: cluster.name,
    cluster: cluster.name,
    path: `rancher/${cluster.name}/registration-plan.json`,
    content: JSON.stringify(doc, null, 2) + "\n",
  };
}

function clusterDnsArtifacts(model: EnvironmentModel, cluster: ClusterSettings): Artifact[] {
  const values = clusterDnsChartValues(model.dns, cluster);
  const globals = { clusterDnsIp: cluster.clusterDnsIp, clusterDomain: cluster.clusterDomain };
  const dir = `dns/${cluster.name}`;
  const common = { target: cluster.name, cluster: cluster.name };
  const artifacts: Artifact[] = [
    {
      ...common,
      kind: "coredns-chart-values",
      path: `${dir}/coredns-values.yaml`,
      content: renderChartValuesYaml(values),
    },
    {
      ...common,
      kind: "coredns-corefile",
      path: `${dir}/Corefile`,
      content: renderChartCorefile(values, globals) + "\n",
    },
    {
      ...common,
      kind: "helmchartconfig",
      path: `${dir}/helmchartconfig-rke2-coredns.yaml`,
      content: renderManifest(helmChartConfigObject(values, cluster, model.dns)),
    },
  ];
  if (values.nodelocal?.enabled) {
    artifacts.push({
      ...common,
      kind: "nodelocal-corefile",
      path: `${dir}/Corefile.nodelocal`,
      // As the chart of this cluster's release writes it: an old chart leaves the fix's zones out.
      content: renderChartNodeLocalCorefile(
        values.nodelocal,
        globals,
        corednsChartOf(cluster.version),
      ),
    });
  }
  for (const { name: namespace } of model.dns.policyNamespaces) {
    artifacts.push({
      ...common,
      kind: "networkpolicy",
      path: `${dir}/networkpolicy-${namespace}.yaml`,
      content: renderManifest(dnsEgressNetworkPolicyObject(namespace, model.dns, cluster)),
    });
  }
  return artifacts;
}
