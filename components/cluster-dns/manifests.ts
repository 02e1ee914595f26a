import * as YAML from "yaml";
import { ClusterSettings, DnsSettings } from "../model";
import { CorednsChartValues } from "./chart";
import { keepOperatorValues, OPERATOR_VALUES_ANNOTATION, parseValuesContent } from "./kept-values";
import { dnsKubeletArgs, renderChartValuesYaml } from "./values";

/** Annotations on the HelmChartConfig stating the cluster facts its values were rendered for. */
export const ANNOTATIONS = {
  clusterDomain: "rke2-remediation.io/cluster-domain",
  clusterDnsIp: "rke2-remediation.io/cluster-dns-ip",
  kubeProxyMode: "rke2-remediation.io/kube-proxy-mode",
  kubeletClusterDns: "rke2-remediation.io/kubelet-cluster-dns",
  /** The RKE2 release, which decides the rke2-coredns chart that renders the values. */
  rke2Version: "rke2-remediation.io/rke2-version",
} as const;

/** The address kubelet writes into pods' resolv.conf for these settings. */
export function kubeletClusterDns(dns: DnsSettings, cluster: ClusterSettings): string {
  const arg = dnsKubeletArgs(dns, cluster).find((a) => a.startsWith("cluster-dns="));
  return arg ? arg.slice("cluster-dns=".length) : cluster.clusterDnsIp;
}

/**
 * The HelmChartConfig RKE2's helm-controller merges into its packaged rke2-coredns HelmChart.
 * With `operatorValues` (the `valuesContent` an operator wrote, kept-values.ts), it carries the
 * fix's values with theirs kept, and records their text in an annotation.
 */
export function helmChartConfigObject(
  values: CorednsChartValues,
  cluster?: ClusterSettings,
  dns?: DnsSettings,
  operatorValues?: string,
): Record<string, unknown> {
  const annotations =
    cluster && dns
      ? {
          [ANNOTATIONS.clusterDomain]: cluster.clusterDomain,
          [ANNOTATIONS.clusterDnsIp]: cluster.clusterDnsIp,
          [ANNOTATIONS.kubeProxyMode]: cluster.kubeProxyMode,
          [ANNOTATIONS.kubeletClusterDns]: kubeletClusterDns(dns, cluster),
          [ANNOTATIONS.rke2Version]: cluster.version,
          ...(operatorValues ? { [OPERATOR_VALUES_ANNOTATION]: operatorValues } : {}),
        }
      : undefined;
  const valuesContent = operatorValues
    ? renderChartValuesYaml(
        keepOperatorValues(
          values,
          parseValuesContent(operatorValues, "the rke2-coredns HelmChartConfig"),
        ).values,
      )
    : renderChartValuesYaml(values);
  return {
    apiVersion: "helm.cattle.io/v1",
    kind: "HelmChartConfig",
    // Must match the packaged HelmChart's name and namespace, or helm-controller ignores it.
    metadata: {
      name: "rke2-coredns",
      namespace: "kube-system",
      ...(annotations ? { annotations } : {}),
    },
    spec: { valuesContent },
  };
}

/**
 * Allows DNS egress from every pod of a namespace on UDP and TCP 53 (seed 001: a port without a
 * protocol means TCP only, and answers that exceed UDP fall back to TCP) to the node-local cache
 * and to the CoreDNS pods. Policies select pods after DNAT, so kube-dns is matched by its pods.
 */
export function dnsEgressNetworkPolicyObject(
  namespace: string,
  dns: DnsSettings,
  cluster: ClusterSettings,
): Record<string, unknown> {
  const ports = [
    { protocol: "UDP", port: 53 },
    { protocol: "TCP", port: 53 },
  ];
  const to: Record<string, unknown>[] = [
    {
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
      podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
    },
    { ipBlock: { cidr: `${cluster.clusterDnsIp}/32` } },
  ];
  if (dns.nodeLocal.enabled) to.push({ ipBlock: { cidr: `${dns.nodeLocal.ip}/32` } });
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: "allow-dns-egress", namespace },
    spec: { podSelector: {}, policyTypes: ["Egress"], egress: [{ to, ports }] },
  };
}

export function renderManifest(object: Record<string, unknown>): string {
  return YAML.stringify(object, { aliasDuplicateObjects: false });
}

/** Several objects as one multi-document manifest, as RKE2's manifests directory takes them. */
export function renderManifests(objects: readonly Record<string, unknown>[]): string {
  return objects.map((o) => renderManifest(o)).join("---\n");
}

/** Rancher `rkeConfig.chartValues`: values keyed by chart name. */
export function renderRancherChartValues(values: CorednsChartValues): string {
  return YAML.stringify({ "rke2-coredns": values }, { aliasDuplicateObjects: false });
}
