import { UnknownValueError } from "@pulumi/policy";

/** Resource type tokens the policies look at; the components define the same tokens. */
export const LIBVIRT_DNS_TYPE = "pulumi-nodejs:dynamic/libvirt:DnsHostRecords";
export const NODE_PREPARATION_TYPE = "pulumi-nodejs:dynamic/node:Preparation";
export const REMOTE_COMMAND_TYPE = "command:remote:Command";
export const REMOTE_FILE_TYPE = "pulumi-nodejs:dynamic/host:File";
export const UPSTREAM_PREFLIGHT_TYPE = "pulumi-nodejs:dynamic/dns:UpstreamPreflight";
export const HELM_CHART_CONFIG_TYPE = "kubernetes:helm.cattle.io/v1:HelmChartConfig";
export const NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy";
export const RANCHER_CLUSTER_TYPE = "rancher2:index/clusterV2:ClusterV2";
export const RANCHER_CLUSTER_SYNC_TYPE = "rancher2:index/clusterSync:ClusterSync";
export const RANCHER_NODE_REGISTRATION_TYPE = "pulumi-nodejs:dynamic/rancher:NodeRegistration";
export const RANCHER_CLUSTER_WAIT_TYPE = "pulumi-nodejs:dynamic/rancher:ClusterWait";
export const RKE2_NODE_START_TYPE = "pulumi-nodejs:dynamic/rke2:NodeStart";
export const RKE2_JOIN_GATE_TYPE = "pulumi-nodejs:dynamic/rke2:JoinGate";
export const RKE2_CONFIG_PATH = "/etc/rancher/rke2/config.yaml";

/** Types whose resources open SSH sessions and therefore must pin the host key. */
export const SSH_RESOURCE_TYPES = [
  LIBVIRT_DNS_TYPE,
  NODE_PREPARATION_TYPE,
  REMOTE_COMMAND_TYPE,
  REMOTE_FILE_TYPE,
  UPSTREAM_PREFLIGHT_TYPE,
  "pulumi-nodejs:dynamic/node:PortsPreflight",
  RKE2_NODE_START_TYPE,
  RKE2_JOIN_GATE_TYPE,
  RANCHER_NODE_REGISTRATION_TYPE,
  RANCHER_CLUSTER_WAIT_TYPE,
];

/**
 * A property's value, or undefined while a preview does not know it yet: the policy SDK throws
 * UnknownValueError on reading an unknown, which would turn the whole check into an advisory
 * "can't run during preview" instead of checking what is known.
 */
export function knownProp(props: Record<string, unknown>, name: string): unknown {
  try {
    return props[name];
  } catch (err) {
    if (err instanceof UnknownValueError) return undefined;
    throw err;
  }
}

export function objectProp(
  props: Record<string, unknown>,
  name: string,
): Record<string, unknown> | undefined {
  const value = props[name];
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)
    : undefined;
}
