/**
 * Finds the rke2-coredns configurations and DNS NetworkPolicies a stack delivers, wherever they
 * travel: a HelmChartConfig through the Kubernetes API, a manifest file in the RKE2 server
 * manifests directory, or Rancher chartValues. Policies check them in one shape.
 */
import * as YAML from "yaml";
import { ANNOTATIONS } from "../../components/cluster-dns/manifests";
import {
  ChartRenderError,
  CorednsChartValues,
  renderChartCorefile,
} from "../../components/cluster-dns/chart";
import {
  HELM_CHART_CONFIG_TYPE,
  NETWORK_POLICY_TYPE,
  RANCHER_CLUSTER_TYPE,
  REMOTE_FILE,
  RKE2_MANIFESTS_DIR,
} from "../../components/model";

export interface CorednsConfig {
  readonly values: CorednsChartValues & Record<string, unknown>;
  /** Facts of the cluster the values were rendered for, when the delivery records them. */
  readonly clusterDomain: string;
  readonly clusterDnsIp?: string;
  readonly kubeProxyMode?: string;
  readonly kubeletClusterDns?: string;
  /** The cluster's RKE2 release, which decides the rke2-coredns chart that renders the values. */
  readonly rke2Version?: string;
}

type Doc = Record<string, unknown>;

function manifestDocs(type: string, props: Record<string, unknown>): Doc[] {
  if (type === HELM_CHART_CONFIG_TYPE || type === NETWORK_POLICY_TYPE) return [props];
  if (type === REMOTE_FILE.token && String(props.path ?? "").startsWith(`${RKE2_MANIFESTS_DIR}/`)) {
    return manifestObjects(String(props.content ?? ""));
  }
  return [];
}

/** The objects of a multi-document YAML manifest; documents that are not objects are skipped. */
export function manifestObjects(text: string): Doc[] {
  try {
    return YAML.parseAllDocuments(text)
      .map((d) => d.toJS() as Doc)
      .filter((d) => typeof d === "object" && d !== null);
  } catch {
    return [];
  }
}

export function isCorednsHelmChartConfig(doc: Doc): boolean {
  const meta = (doc.metadata ?? {}) as Doc;
  return doc.kind === "HelmChartConfig" && meta.name === "rke2-coredns";
}

export function corednsConfigsOf(type: string, props: Record<string, unknown>): CorednsConfig[] {
  const configs: CorednsConfig[] = [];
  for (const doc of manifestDocs(type, props).filter(isCorednsHelmChartConfig)) {
    const annotations = (((doc.metadata ?? {}) as Doc).annotations ?? {}) as Record<string, string>;
    const valuesContent = String(((doc.spec ?? {}) as Doc).valuesContent ?? "");
    configs.push({
      values: (YAML.parse(valuesContent) ?? {}) as CorednsConfig["values"],
      clusterDomain: annotations[ANNOTATIONS.clusterDomain] ?? "cluster.local",
      clusterDnsIp: annotations[ANNOTATIONS.clusterDnsIp],
      kubeProxyMode: annotations[ANNOTATIONS.kubeProxyMode],
      kubeletClusterDns: annotations[ANNOTATIONS.kubeletClusterDns],
      rke2Version: annotations[ANNOTATIONS.rke2Version],
    });
  }
  if (type === RANCHER_CLUSTER_TYPE) {
    const rke = (props.rkeConfig ?? {}) as Doc;
    const values = (rancherChartValues(rke) ?? {})["rke2-coredns"];
    if (values && typeof values === "object") {
      const global = (
        rke.machineGlobalConfig ? YAML.parse(String(rke.machineGlobalConfig)) : {}
      ) as Doc;
      const kubeletArgs = ((global["kubelet-arg"] ?? []) as string[]).map(String);
      const proxyArgs = ((global["kube-proxy-arg"] ?? []) as string[]).map(String);
      configs.push({
        values: values as CorednsConfig["values"],
        clusterDomain: String(global["cluster-domain"] ?? "cluster.local"),
        clusterDnsIp: global["cluster-dns"] ? String(global["cluster-dns"]) : undefined,
        kubeProxyMode: proxyArgs.includes("proxy-mode=ipvs") ? "ipvs" : "iptables",
        kubeletClusterDns: kubeletArgs
          .find((a) => a.startsWith("cluster-dns="))
          ?.slice("cluster-dns=".length),
        rke2Version: props.kubernetesVersion ? String(props.kubernetesVersion) : undefined,
      });
    }
  }
  return configs;
}

/**
 * A ClusterV2's `rkeConfig.chartValues` (YAML keyed by chart name) as an object; undefined when
 * the text is not a YAML mapping. Absent chartValues are an empty mapping.
 */
export function rancherChartValues(rkeConfig: Doc): Doc | undefined {
  if (!rkeConfig.chartValues) return {};
  try {
    const parsed: unknown = YAML.parse(String(rkeConfig.chartValues));
    if (parsed === null) return {};
    return typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Doc) : undefined;
  } catch {
    return undefined;
  }
}

export function networkPoliciesOf(type: string, props: Record<string, unknown>): Doc[] {
  return manifestDocs(type, props).filter(
    (d) => d.kind === "NetworkPolicy" || type === NETWORK_POLICY_TYPE,
  );
}

/** The Corefile CoreDNS would run, or undefined when the values break the ConfigMap (its own policy). */
export function corefileOf(config: CorednsConfig): string | undefined {
  try {
    return renderChartCorefile(config.values, {
      clusterDnsIp: config.clusterDnsIp ?? "",
      clusterDomain: config.clusterDomain,
    });
  } catch (err) {
    if (err instanceof ChartRenderError) return undefined;
    throw err;
  }
}
