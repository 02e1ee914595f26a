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
import { MANAGEMENT_OUTPUT, managementStackOutputs } from "./config/management-stack";
import {
  rancherCaChecksum,
  registrationPlanDocument,
} from "../components/rancher-cluster/registration";
import { renderRkeConfigText } from "../components/rancher-cluster/rke-config";
import { restartPlan, RestartPlan } from "../components/rke2-cluster/restart-plan";
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
  | "rancher-registration-plan"
  | "management-outputs";

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

/**
 * Where the stack output `rancher` is written, as `{"rancher": ...}`: the shape
 * `pulumi stack output --json` prints, so that a downstream stack's offline render and verify
 * take it with `--management-outputs`.
 */
export const MANAGEMENT_OUTPUTS_PATH = "stack/management-outputs.json";

/** Where the restart plan is written below the output directory. */
export const RESTART_PLAN_PATH = "rke2/restart-plan.json";

/** Stands where a secret goes; `render` output is for review and never holds secrets. */
export const REDACTED = "<redacted: Pulumi secret>";

/**
 * Every artifact of the parts the stack's `deploy` selection turns on, as the program would put
 * them in place: a part turned off renders nothing, as it declares nothing. The RKE2 restart
 * plan, last, compares the management nodes' configs with `previousRestartPlan`, the plan an
 * earlier render wrote, when there is one.
 */
export function renderArtifacts(
  model: EnvironmentModel,
  previousRestartPlan?: RestartPlan,
): Artifact[] {
  const { deploy } = model;
  const rke2Configs = deploy.rke2Servers ? rke2ConfigArtifacts(model) : [];
  return [
    ...(deploy.libvirtDnsRecords ? libvirtArtifacts(model) : []),
    ...(deploy.nodePreparation ? nodePreparationArtifacts(model) : []),
    ...rke2Configs,
    ...(deploy.clusterDns ? clusterDnsArtifacts(model, model.management) : []),
    // The downstream clusters' DNS fix, computed where the program computes their chartValues.
    ...(deploy.clusterDns || deploy.rancherClusters
      ? (model.rancher?.downstreamClusters ?? []).flatMap((c) => clusterDnsArtifacts(model, c))
      : []),
    ...(deploy.rancherClusters
      ? (model.rancher?.downstreamClusters ?? []).flatMap((c) => [
          ...rkeConfigArtifacts(model, c),
          registrationPlanArtifact(model, c),
        ])
      : []),
    ...restartPlanArtifacts(model, rke2Configs, previousRestartPlan),
    ...managementOutputsArtifacts(model),
  ];
}

/** The `rancher` output of a stack that owns Rancher, for the stacks that reference it. */
function managementOutputsArtifacts(model: EnvironmentModel): Artifact[] {
  const outputs = managementStackOutputs(model);
  if (!outputs) return [];
  return [
    {
      kind: "management-outputs",
      target: model.stack,
      path: MANAGEMENT_OUTPUTS_PATH,
      content: JSON.stringify({ [MANAGEMENT_OUTPUT]: outputs }, null, 2) + "\n",
    },
  ];
}

/** Which management nodes a change of their configs restarts, in order; none without configs. */
function restartPlanArtifacts(
  model: EnvironmentModel,
  rke2Configs: readonly Artifact[],
  previous: RestartPlan | undefined,
): Artifact[] {
  if (rke2Configs.length === 0) return [];
  const plan = restartPlan(
    model.management.name,
    model.management.version,
    rke2Configs.map((a) => ({
      node: a.target,
      role: a.kind === "rke2-server-config" ? "server" : "agent",
      config: a.content,
    })),
    previous,
  );
  return [
    {
      kind: "rke2-restart-plan",
      target: model.management.name,
      cluster: model.management.name,
      path: RESTART_PLAN_PATH,
      content: JSON.stringify(plan, null, 2) + "\n",
    },
  ];
}

function libvirtArtifacts(model: EnvironmentModel): Artifact[] {
  const { libvirt } = model;
  const host = libvirt.ssh?.host ?? "the KVM host";
  return [
    {
      kind: "libvirt-dns-host-xml",
      target: `${host} network ${libvirt.network}`,
      path: "libvirt/dns-hosts.xml",
      content: dnsHostRecords(libvirt.dnsRecords).map(renderDnsHostXml).join("\n") + "\n",
    },
  ];
}

function nodePreparationArtifacts(model: EnvironmentModel): Artifact[] {
  const artifacts: Artifact[] = [];
  const prepareScript = componentFile(
    path.join(__dirname, "..", "components", "node-preparation"),
    "prepare-node.sh",
  );
  for (const node of model.nodes) {
    const params = nodeScriptParams("apply", {
      networkManagerConfig: renderUnmanagedDevicesConfig(model.nodePreparation.unmanagedDevices),
      bringUpKubeIpvs: model.nodePreparation.bringUpKubeIpvs,
      keepFirewalld: model.nodePreparation.firewalld === "keep",
      nodeIp: node.ip,
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
  return artifacts;
}

/** The management nodes' config.yaml; `render` adds the restart plan they give. */
function rke2ConfigArtifacts(model: EnvironmentModel): Artifact[] {
  const artifacts: Artifact[] = [];
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
