/**
 * Resource type tokens and host paths that components declare and policies check: the one copy
 * both read, so a renamed type cannot leave a policy checking nothing.
 */

/**
 * A dynamic provider's resource type. The Node.js SDK registers `new dynamic.Resource(provider,
 * name, props, opts, module, type)` as `pulumi-nodejs:dynamic/<module>:<type>`
 * (pulumi/pulumi@v3.276.0 sdk/nodejs/dynamic/index.ts, class Resource).
 */
export interface DynamicResourceType {
  readonly module: string;
  readonly type: string;
  readonly token: string;
}

function dynamicResourceType(module: string, type: string): DynamicResourceType {
  return { module, type, token: `pulumi-nodejs:dynamic/${module}:${type}` };
}

export const LIBVIRT_DNS_RECORDS = dynamicResourceType("libvirt", "DnsHostRecords");
export const NODE_PREPARATION = dynamicResourceType("node", "Preparation");
export const PORTS_PREFLIGHT = dynamicResourceType("node", "PortsPreflight");
export const REMOTE_FILE = dynamicResourceType("host", "File");
export const UPSTREAM_PREFLIGHT = dynamicResourceType("dns", "UpstreamPreflight");
/** The live check before the DNS egress NetworkPolicies: through the API, or over SSH. */
export const DNS_EGRESS_CHECK = dynamicResourceType("dns", "EgressIsolationCheck");
export const DNS_EGRESS_SSH_CHECK = dynamicResourceType("dns", "EgressIsolationCheckOnServer");
/** The check that no other manifest on a server defines what the DNS fix's manifest does. */
export const DNS_MANIFEST_CHECK = dynamicResourceType("dns", "ManifestConflictCheck");
export const RKE2_NODE_START = dynamicResourceType("rke2", "NodeStart");
export const RKE2_JOIN_GATE = dynamicResourceType("rke2", "JoinGate");
/** The read of the first server's admin kubeconfig, for the stack output. */
export const RKE2_KUBECONFIG = dynamicResourceType("rke2", "Kubeconfig");
export const RANCHER_NODE_REGISTRATION = dynamicResourceType("rancher", "NodeRegistration");
export const RANCHER_CLUSTER_WAIT = dynamicResourceType("rancher", "ClusterWait");

/** Provider resources the program declares (kubernetes and rancher2 packages). */
export const HELM_CHART_CONFIG_TYPE = "kubernetes:helm.cattle.io/v1:HelmChartConfig";
export const NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy";
export const RANCHER_CLUSTER_TYPE = "rancher2:index/clusterV2:ClusterV2";
export const RANCHER_CLUSTER_SYNC_TYPE = "rancher2:index/clusterSync:ClusterSync";

/**
 * A resource this program never declares but a hand-written program beside it may
 * (`@pulumi/command`'s remote.Command): the policies check what it runs on hosts too.
 */
export const REMOTE_COMMAND_TYPE = "command:remote:Command";

/** Every type whose resources open SSH sessions: each carries a pinned `connection`. */
export const SSH_RESOURCE_TYPES: readonly string[] = [
  LIBVIRT_DNS_RECORDS.token,
  NODE_PREPARATION.token,
  PORTS_PREFLIGHT.token,
  REMOTE_FILE.token,
  UPSTREAM_PREFLIGHT.token,
  DNS_EGRESS_SSH_CHECK.token,
  DNS_MANIFEST_CHECK.token,
  RKE2_NODE_START.token,
  RKE2_JOIN_GATE.token,
  RKE2_KUBECONFIG.token,
  RANCHER_NODE_REGISTRATION.token,
  RANCHER_CLUSTER_WAIT.token,
  REMOTE_COMMAND_TYPE,
];

/** RKE2's config file (rancher/rke2-docs@9477b7b1:docs/add-ons/helm.md, its config examples). */
export const RKE2_CONFIG_PATH = "/etc/rancher/rke2/config.yaml";
/** Manifests RKE2 applies on servers at start and on change (rancher/rke2-docs@9477b7b1:docs/add-ons/helm.md). */
export const RKE2_MANIFESTS_DIR = "/var/lib/rancher/rke2/server/manifests";
