/**
 * The values keys the rke2-coredns chart reads: every top-level key and every key under
 * `nodelocal` that one of its templates uses (`.Values.<key>` in templates/*.yaml and
 * templates/_helpers.tpl), per chart version. A key no template reads is ignored by Helm without
 * a word: the chart has no values schema. Seed 001 set `force_tcp`, `healthTimeout`,
 * `security.spoofProtection` and `logging.audit`; none of them exist.
 *
 * Read in rancher/rke2-charts@d83185c93194 (main; the repository has no tags) under
 * charts/rke2-coredns/rke2-coredns/<chart>/templates/ for every chart version that an RKE2
 * release in chart-releases.ts ships (1.39.201 to 1.46.201) and for 1.47.003.
 */

/** Top-level keys read by chart 1.39.201, the oldest chart of any release in the table. */
const TOP_LEVEL_KEYS_1_39: readonly string[] = [
  "affinity",
  "autoscaler",
  "clusterRole",
  "customAnnotations",
  "customLabels",
  "deployment",
  "env",
  "extraConfig",
  "extraContainers",
  "extraSecrets",
  "extraVolumeMounts",
  "extraVolumes",
  "fullnameOverride",
  "global",
  "hpa",
  "image",
  "isClusterService",
  "k8sApp",
  "k8sAppLabelOverride",
  "livenessProbe",
  "nameOverride",
  "nodeSelector",
  "nodelocal",
  "podAnnotations",
  "podDisruptionBudget",
  "podSecurityContext",
  "priorityClassName",
  "prometheus",
  "rbac",
  "readinessProbe",
  "replicaCount",
  "resources",
  "rollingUpdate",
  "securityContext",
  "servers",
  "service",
  "serviceAccount",
  "serviceType",
  "terminationGracePeriodSeconds",
  "tolerations",
  "topologySpreadConstraints",
  "zoneFiles",
];

/**
 * Keys under `nodelocal` read by chart 1.39.201 (templates/daemonset-nodelocal.yaml,
 * configmap-nodelocal.yaml, lrp-nodelocal.yaml, service-nodelocal.yaml, _helpers.tpl). The
 * node-local-dns Corefile is written by templates/configmap-nodelocal.yaml itself; no chart has a
 * `nodelocal.corefile` value, nor `tolerations`, `affinity` or `priorityClassName` under
 * `nodelocal` (the DaemonSet hard-codes `tolerations: [{operator: Exists}]` and
 * `priorityClassName: system-node-critical`).
 */
const NODELOCAL_KEYS_1_39: readonly string[] = [
  "enabled",
  "ip_address",
  "ipvs",
  "use_cilium_lrp",
  "image",
  "initimage",
  "nodeSelector",
];

/**
 * Keys a later chart started to read, with the first chart version whose templates read them.
 * `nodelocal.extraClusterDomains` came with 1.46.003 (rke2-charts commit 5d122271, "Add
 * nodelocal.extraClusterDomains for extra cluster-domain zones", #1044); no RKE2 release ships a
 * chart between 1.46.002 and 1.46.201.
 */
export const VALUE_KEYS_SINCE: Readonly<Record<string, string>> = {
  initContainers: "1.43.000",
  automountServiceAccountToken: "1.45.200",
  podLabels: "1.45.200",
  "nodelocal.resources": "1.45.204",
  "nodelocal.extraClusterDomains": "1.46.003",
};

/** Orders chart versions such as 1.45.212 < 1.46.002 < 1.46.201 < 1.47.000. */
export function compareChartVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function keysSince(prefix: string, chart: string | undefined): string[] {
  return Object.entries(VALUE_KEYS_SINCE)
    .filter(([, since]) => chart === undefined || compareChartVersions(chart, since) >= 0)
    .map(([key]) => key)
    .filter((key) => (prefix ? key.startsWith(`${prefix}.`) : !key.includes(".")))
    .map((key) => (prefix ? key.slice(prefix.length + 1) : key));
}

/** Top-level values keys the chart reads; without a version, those of the newest chart. */
export function chartValueKeys(chart?: string): string[] {
  return [...TOP_LEVEL_KEYS_1_39, ...keysSince("", chart)];
}

/** Keys under `nodelocal` the chart reads; without a version, those of the newest chart. */
export function nodeLocalValueKeys(chart?: string): string[] {
  return [...NODELOCAL_KEYS_1_39, ...keysSince("nodelocal", chart)];
}

/** Whether the chart reads a values key (dotted path for keys under `nodelocal`). */
export function chartReadsKey(chart: string, key: string): boolean {
  const [head, ...rest] = key.split(".");
  if (rest.length === 0) return chartValueKeys(chart).includes(head);
  return head === "nodelocal" && nodeLocalValueKeys(chart).includes(rest.join("."));
}

/**
 * Keys (dotted paths) of a values object that the chart does not read; without a chart
 * version, judged against the newest chart.
 */
export function unknownValueKeys(values: Record<string, unknown>, chart?: string): string[] {
  const top = chartValueKeys(chart);
  const nodelocalKeys = nodeLocalValueKeys(chart);
  const unknown = Object.keys(values).filter((k) => !top.includes(k));
  const nodelocal = values.nodelocal;
  if (typeof nodelocal === "object" && nodelocal !== null) {
    unknown.push(
      ...Object.keys(nodelocal)
        .filter((k) => !nodelocalKeys.includes(k))
        .map((k) => `nodelocal.${k}`),
    );
  }
  return unknown;
}
