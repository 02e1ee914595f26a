/**
 * Which parts of the estate (`deploy.*`) read each stack key. A key validation requires is
 * required only while a part that reads it is on; given while every such part is off, it does
 * nothing, and `configWarnings` says so. Keys this table does not list are read whatever the
 * selection: `deploy` itself, and `libvirt.subnet` and `libvirt.gateway`, the node network every
 * address check compares with.
 */
import { DeploySelection, MANAGEMENT_CLUSTER } from "../../components/model";

/** A part of the estate, as its `deploy.<part>` key names it. */
export type DeployPart = keyof DeploySelection;

export const DEPLOY_PARTS: readonly DeployPart[] = [
  "libvirtDnsRecords",
  "nodePreparation",
  "rke2Servers",
  "clusterDns",
  "rancherClusters",
];

/**
 * The parts that read a key: a list, or, for a key of a list entry whose readers depend on the
 * entry (a node's roles mean something else in the management cluster and downstream), a
 * function of that entry as the stack gives it.
 */
export type KeyReaders =
  readonly DeployPart[] | ((entry: Readonly<Record<string, unknown>>) => readonly DeployPart[]);

/** Readers of one key per sub-key of a map, plus the map itself: the union of its keys'. */
function section(
  path: string,
  keys: Readonly<Record<string, readonly DeployPart[]>>,
): Record<string, readonly DeployPart[]> {
  const all = new Set(Object.values(keys).flat());
  return {
    [path]: DEPLOY_PARTS.filter((p) => all.has(p)),
    ...Object.fromEntries(Object.entries(keys).map(([key, parts]) => [`${path}.${key}`, parts])),
  };
}

const RKE2_SERVERS: readonly DeployPart[] = ["rke2Servers"];
const RANCHER_CLUSTERS: readonly DeployPart[] = ["rancherClusters"];
/** The parts that compute a cluster's DNS fix: the management cluster's, or downstream chartValues. */
const DOWNSTREAM_DNS: readonly DeployPart[] = ["clusterDns", "rancherClusters"];
const NODE_PARTS: readonly DeployPart[] = [
  "nodePreparation",
  "rke2Servers",
  "clusterDns",
  "rancherClusters",
];

const isManagementNode = (node: Readonly<Record<string, unknown>>) =>
  node.cluster === undefined || node.cluster === MANAGEMENT_CLUSTER;

/**
 * A management node's role says which nodes are servers: RKE2 starts them, the DNS fix goes to
 * the first one, and node preparation checks the RKE2 ports between them. A downstream node's
 * roles are what Rancher registers it as.
 */
const roleReaders = (node: Readonly<Record<string, unknown>>): readonly DeployPart[] =>
  isManagementNode(node) ? ["nodePreparation", "rke2Servers", "clusterDns"] : RANCHER_CLUSTERS;

/**
 * Every key some part does not read, by path; `[]` stands for every entry of a list. Where a
 * map and its keys are both listed, a map whose parts are all off is reported once, as a whole.
 */
export const KEY_READERS: Readonly<Record<string, KeyReaders>> = {
  "libvirt.ssh": ["libvirtDnsRecords"],
  "libvirt.network": ["libvirtDnsRecords"],
  "libvirt.dhcpDomain": ["libvirtDnsRecords"],
  // The DNS parts read the Rancher host's record: the cluster DNS's answer for Rancher when
  // dns.staticHosts gives none and no management server is listed.
  "libvirt.dnsRecords": ["libvirtDnsRecords", "clusterDns", "rancherClusters"],

  nodes: NODE_PARTS,
  "nodes[].role": roleReaders,
  "nodes[].roles": roleReaders,
  "nodes[].extraConfig": (node) => (isManagementNode(node) ? RKE2_SERVERS : RANCHER_CLUSTERS),

  ...section("rke2", {
    version: ["rke2Servers", "clusterDns"],
    cni: ["nodePreparation", "rke2Servers"],
    kubeProxyMode: ["nodePreparation", "rke2Servers", "clusterDns"],
    clusterCidr: RKE2_SERVERS,
    serviceCidr: ["rke2Servers", "clusterDns"],
    clusterDomain: ["rke2Servers", "clusterDns"],
    tlsSan: RKE2_SERVERS,
    registrationAddress: RKE2_SERVERS,
    privateRegistry: RKE2_SERVERS,
    registries: RKE2_SERVERS,
    etcdSnapshot: RKE2_SERVERS,
    nodePortRange: RKE2_SERVERS,
    joinGate: RKE2_SERVERS,
    extraConfig: RKE2_SERVERS,
    serverConfig: RKE2_SERVERS,
    agentConfig: RKE2_SERVERS,
    installCommand: RKE2_SERVERS,
    artifacts: RKE2_SERVERS,
    serverJoin: RKE2_SERVERS,
    drain: RKE2_SERVERS,
    agentsMaxUnavailable: RKE2_SERVERS,
    dnsDelivery: ["clusterDns"],
  }),

  // `rancher` itself, `rancher.url` and `rancher.caCertificate` are read whatever the selection:
  // they are the stack's output `rancher`, which downstream stacks read (management-stack.ts).
  // Where rancher.url, its CA and Rancher's addresses come from in a downstream stack.
  managementStack: ["libvirtDnsRecords", "clusterDns", "rancherClusters"],
  // Node preparation reads a downstream cluster's CNI and kube-proxy mode for its nodes.
  ...section("rancher.downstreamClusters[]", {
    name: ["nodePreparation", "clusterDns", "rancherClusters"],
    version: DOWNSTREAM_DNS,
    cni: ["nodePreparation", "rancherClusters"],
    kubeProxyMode: ["nodePreparation", "clusterDns", "rancherClusters"],
    clusterCidr: RANCHER_CLUSTERS,
    serviceCidr: DOWNSTREAM_DNS,
    clusterDomain: DOWNSTREAM_DNS,
    tlsSan: RANCHER_CLUSTERS,
    privateRegistry: RANCHER_CLUSTERS,
    etcdSnapshot: RANCHER_CLUSTERS,
    nodePortRange: RANCHER_CLUSTERS,
    joinGate: RANCHER_CLUSTERS,
    extraConfig: RANCHER_CLUSTERS,
    insecureRegistration: RANCHER_CLUSTERS,
  }),
  "rancher.downstreamClusters": ["nodePreparation", "clusterDns", "rancherClusters"],

  ...section("dns", {
    staticHosts: DOWNSTREAM_DNS,
    // The libvirt records refuse a record inside a neutralised domain.
    neutralizedSearchDomains: ["libvirtDnsRecords", "clusterDns", "rancherClusters"],
    // RKE2's kubelet points pods at the node-local cache.
    nodeLocal: ["rke2Servers", "clusterDns", "rancherClusters"],
    upstreamResolvers: DOWNSTREAM_DNS,
    policyNamespaces: DOWNSTREAM_DNS,
  }),

  ...section("nodePreparation", {
    unmanagedDevices: ["nodePreparation"],
    bringUpKubeIpvs: ["nodePreparation"],
    firewalld: ["nodePreparation"],
  }),

  sshPrivateKey: DEPLOY_PARTS,
  rke2Token: RKE2_SERVERS,
  rancherToken: RANCHER_CLUSTERS,
  kubeconfig: ["clusterDns"],
  registryAuth: RKE2_SERVERS,
};

/** `nodes[3].roles` -> `nodes[].roles`: the table's form of a concrete key path. */
function tablePath(path: string): string {
  return path.replace(/\[\d+\]/g, "[]");
}

/**
 * Whether the selection reads the key at all (`rke2.version`, `dns.upstreamResolvers`): a key
 * the table does not list is always read. Only for keys whose readers are a list.
 */
export function keyIsRead(deploy: DeploySelection, path: string): boolean {
  const readers = KEY_READERS[tablePath(path)];
  if (readers === undefined) return true;
  if (typeof readers === "function") {
    throw new Error(`the readers of ${path} depend on its list entry; read them from the entry`);
  }
  return readers.some((part) => deploy[part]);
}

/** A key the stack gives that no part of its selection reads. */
export interface UnusedKey {
  /** The key's path, e.g. `rke2.version` or `nodes[0].roles`. */
  readonly path: string;
  /** The parts that would read it, every one of them off. */
  readonly parts: readonly DeployPart[];
}

/**
 * Every key the stack gives whose readers are all off, outermost first: a map or list reported
 * as a whole is not reported again key by key. Secret keys count as given when Pulumi holds them.
 */
export function unusedKeys(
  values: Readonly<Record<string, unknown>>,
  secretKeys: ReadonlySet<string>,
  deploy: DeploySelection,
): UnusedKey[] {
  const found: UnusedKey[] = [];
  const top: Record<string, unknown> = { ...values };
  for (const key of secretKeys) if (!(key in top)) top[key] = "";
  const visit = (value: unknown, path: string, entry: Readonly<Record<string, unknown>>) => {
    if (value === undefined) return;
    const readers = KEY_READERS[tablePath(path)];
    if (readers !== undefined) {
      const parts = typeof readers === "function" ? readers(entry) : readers;
      if (!parts.some((part) => deploy[part])) {
        found.push({ path, parts });
        return;
      }
    }
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        const isMap = typeof item === "object" && item !== null && !Array.isArray(item);
        visit(item, `${path}[${i}]`, isMap ? (item as Record<string, unknown>) : entry);
      });
    } else if (typeof value === "object" && value !== null) {
      for (const [key, child] of Object.entries(value)) visit(child, `${path}.${key}`, entry);
    }
  };
  for (const [key, value] of Object.entries(top)) visit(value, key, {});
  return found;
}
