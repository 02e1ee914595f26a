/**
 * Top-level keys of the rke2-coredns chart's values.yaml (1.47.x) and of its `nodelocal` map.
 * Seed 001 set `force_tcp`, `healthTimeout`, `security.spoofProtection` and `logging.audit`:
 * none of them exist, and Helm ignores unknown values without a word.
 */
export const CHART_VALUE_KEYS: readonly string[] = [
  "global",
  "image",
  "replicaCount",
  "resources",
  "rollingUpdate",
  "terminationGracePeriodSeconds",
  "podAnnotations",
  "podLabels",
  "serviceType",
  "prometheus",
  "service",
  "serviceAccount",
  "rbac",
  "clusterRole",
  "isClusterService",
  "priorityClassName",
  "podSecurityContext",
  "securityContext",
  "servers",
  "extraConfig",
  "livenessProbe",
  "readinessProbe",
  "affinity",
  "topologySpreadConstraints",
  "nodeSelector",
  "tolerations",
  "podDisruptionBudget",
  "zoneFiles",
  "extraContainers",
  "extraVolumes",
  "extraVolumeMounts",
  "extraSecrets",
  "env",
  "k8sAppLabelOverride",
  "customLabels",
  "customAnnotations",
  "hpa",
  "autoscaler",
  "deployment",
  "initContainers",
  "k8sApp",
  "nodelocal",
];

export const NODELOCAL_VALUE_KEYS: readonly string[] = [
  "enabled",
  "ip_address",
  "ipvs",
  "extraClusterDomains",
  "corefile",
  "use_cilium_lrp",
  "image",
  "initimage",
  "nodeSelector",
  "resources",
  "tolerations",
  "affinity",
  "priorityClassName",
];

/** Keys (dotted paths) of a values object that the chart does not have. */
export function unknownValueKeys(values: Record<string, unknown>): string[] {
  const unknown = Object.keys(values).filter((k) => !CHART_VALUE_KEYS.includes(k));
  const nodelocal = values.nodelocal;
  if (typeof nodelocal === "object" && nodelocal !== null) {
    unknown.push(
      ...Object.keys(nodelocal)
        .filter((k) => !NODELOCAL_VALUE_KEYS.includes(k))
        .map((k) => `nodelocal.${k}`),
    );
  }
  return unknown;
}
