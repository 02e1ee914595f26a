import * as YAML from "yaml";
import { ClusterSettings, DnsSettings } from "../../infra/config/model";
import { CorednsChartValues } from "./chart";
import { renderChartValuesYaml } from "./values";

/** The HelmChartConfig RKE2's helm-controller merges into its packaged rke2-coredns HelmChart. */
export function helmChartConfigObject(values: CorednsChartValues): Record<string, unknown> {
  return {
    apiVersion: "helm.cattle.io/v1",
    kind: "HelmChartConfig",
    // Must match the packaged HelmChart's name and namespace, or helm-controller ignores it.
    metadata: { name: "rke2-coredns", namespace: "kube-system" },
    spec: { valuesContent: renderChartValuesYaml(values) },
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
