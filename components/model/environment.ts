/**
 * The environment model: everything a stack describes, typed and validated once at load.
 * Components take pieces of it as arguments; nothing below `infra/` reads `pulumi.Config`.
 */

/** Roles of nodes in the RKE2 management ("local") cluster. */
export type ManagementRole = "server" | "agent";
/** Roles of nodes registered into a Rancher downstream custom cluster. */
export type DownstreamRole = "etcd" | "controlplane" | "worker";
export type NodeRole = ManagementRole | DownstreamRole;

export const MANAGEMENT_CLUSTER = "management";

export type Cni = "calico" | "canal" | "cilium" | "flannel";
export type KubeProxyMode = "ipvs" | "iptables";

/** A cluster's CNI when its settings name none. */
export const DEFAULT_CNI: Cni = "calico";
/** kube-proxy's mode when a cluster's settings name none: iptables, kube-proxy's own default. */
export const DEFAULT_KUBE_PROXY_MODE: KubeProxyMode = "iptables";

/** An SSH endpoint whose host key is pinned: connections to any other key are refused. */
export interface SshEndpoint {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** The host's public key as an OpenSSH line, "ssh-ed25519 AAAA...". */
  readonly hostKey: string;
}

/**
 * RKE2 settings the product does not manage, written to config.yaml as given (`rke2 server
 * --help` keys, e.g. `selinux: true`, `node-taint: [...]`). Keys the product manages are
 * refused at load; `*-arg` lists add their entries to the product's own.
 */
export type Rke2PassThrough = Readonly<Record<string, unknown>>;

/**
 * Where one release's artifacts come from (`rke2.artifacts`): a directory on the operator's side,
 * or an HTTPS mirror laid out as GitHub's releases (`<url>/<version>/<file>`), its certificate
 * checked against `caFile` when given, else the system's CAs.
 */
export type ArtifactsSource =
  { readonly path: string } | { readonly url: string; readonly caFile?: string };

export interface NodeSpec {
  readonly name: string;
  readonly ip: string;
  /** "management" or the name of a downstream cluster. */
  readonly cluster: string;
  /**
   * Empty only where no part of the stack's selection needs them: a management node's roles
   * where RKE2 and the DNS fix are off, a downstream node's where Rancher registers none.
   */
  readonly roles: readonly NodeRole[];
  readonly ssh: SshEndpoint;
  /** This node's own pass-through settings (`nodes[i].extraConfig`), applied last. */
  readonly extraConfig?: Rke2PassThrough;
}

export interface EtcdSnapshotSettings {
  /** Cron schedule, e.g. "0 *\/6 * * *". */
  readonly scheduleCron: string;
  readonly retention: number;
}

/** A registry mirror of registries.yaml, with RKE2's key names. */
export interface RegistryMirror {
  readonly endpoint: readonly string[];
  readonly rewrite?: Readonly<Record<string, string>>;
}

/** TLS of one registry, with RKE2's key names. */
export interface RegistryTls {
  readonly ca_file?: string;
  readonly cert_file?: string;
  readonly key_file?: string;
  readonly insecure_skip_verify?: boolean;
}

/** The registries.yaml entries a stack manages, credentials aside. */
export interface RegistriesSpec {
  readonly mirrors: Readonly<Record<string, RegistryMirror>>;
  readonly configs: Readonly<Record<string, { readonly tls?: RegistryTls }>>;
}

/** One registry's credentials, with RKE2's key names. */
export interface RegistryAuth {
  readonly username?: string;
  readonly password?: string;
  readonly auth?: string;
  readonly identity_token?: string;
}

/** Settings shared by the management cluster and downstream clusters. */
export interface ClusterSettings {
  readonly name: string;
  /**
   * RKE2 release, e.g. v1.35.6+rke2r1. Empty where nothing of the stack installs RKE2 or renders
   * the cluster's DNS: a cluster without nodes, or with `deploy.rke2Servers` and `clusterDns`
   * (downstream: `clusterDns` and `rancherClusters`) off.
   */
  readonly version: string;
  readonly cni: Cni;
  readonly clusterCidr: string;
  readonly serviceCidr: string;
  /** The kube-dns Service address: the 10th address of the service CIDR, as RKE2 assigns it. */
  readonly clusterDnsIp: string;
  readonly clusterDomain: string;
  readonly kubeProxyMode: KubeProxyMode;
  /**
   * Extra names and addresses in the servers' certificate. Each server adds its own addresses
   * itself; a fixed registration address must be listed here.
   */
  readonly tlsSan: readonly string[];
  /**
   * The fixed registration address (a VIP or DNS name in front of the servers) that joining
   * servers and agents use as `server: https://<it>:9345`. Unset: the first server's IP.
   * Management cluster only; Rancher registers downstream nodes itself.
   */
  readonly registrationAddress?: string;
  /** host:port of the private registry, used as system-default-registry. */
  readonly privateRegistry?: string;
  /**
   * The registries.yaml entries every node of the cluster gets (`rke2.registries`), without
   * credentials (`registryAuth`, a secret). Management cluster only; unset, the nodes' files are
   * left as they are.
   */
  readonly registries?: RegistriesSpec;
  /**
   * Pass-through settings of every node of the cluster (`rke2.extraConfig`; for a downstream
   * cluster, Rancher's machineGlobalConfig), then of the servers (`rke2.serverConfig`) and of the
   * agents (`rke2.agentConfig`), management cluster only.
   */
  readonly extraConfig?: Rke2PassThrough;
  readonly serverConfig?: Rke2PassThrough;
  readonly agentConfig?: Rke2PassThrough;
  readonly etcdSnapshot: EtcdSnapshotSettings;
  /** "30000-60000". */
  readonly nodePortRange: string;
  /**
   * How the cluster DNS fix reaches the cluster: `serverManifest` (a file in the first server's
   * manifests directory, picked up when RKE2 starts or is running) or `helmChartConfig` (through
   * the Kubernetes API with the `kubeconfig` secret). Downstream clusters get Rancher chartValues.
   */
  readonly dnsDelivery: "serverManifest" | "helmChartConfig";
  /** Shell command that installs RKE2 on a node where it is missing. */
  readonly installCommand: string;
  /**
   * Install from one release's artifacts instead of installCommand (`rke2.artifacts`): from a
   * directory on the operator's side, or downloaded there from an HTTPS mirror; copied to each
   * node that installs, checked against the release's checksum file, and installed with
   * install.sh's INSTALL_RKE2_ARTIFACT_PATH.
   */
  readonly artifacts?: ArtifactsSource;
  /**
   * `rke2.drain`: with `enabled`, a running node is cordoned and drained (kubectl drain, pods
   * chosen by `podSelector`, within `timeoutSeconds`) before RKE2 restarts there, and made
   * schedulable again once it is Ready.
   */
  readonly drain: {
    readonly enabled: boolean;
    readonly timeoutSeconds: number;
    readonly podSelector: string;
  };
  /** How many agents restart at a time. */
  readonly agentsMaxUnavailable: number;
  /** Bounds of the join gate. */
  readonly joinGate: { readonly timeoutSeconds: number; readonly pollSeconds: number };
  /**
   * `sequential` (default): each server waits for the previous server's join gate. `parallel`
   * starts all servers at once, which the policy rke2-servers-join-one-at-a-time refuses.
   */
  readonly serverJoin: "sequential" | "parallel";
}

export interface LibvirtSettings {
  /**
   * The KVM host. Unset only where the stack does not manage the network's records
   * (`deploy.libvirtDnsRecords` false) and does not describe the host.
   */
  readonly ssh?: SshEndpoint;
  readonly network: string;
  readonly subnet: string;
  /**
   * The KVM host's address on the network, which no node may take: the stack's
   * `libvirt.gateway`, else the subnet's first address; unset for a subnet too small for one.
   */
  readonly gateway?: string;
  /** hostname -> addresses, each a `<host>` record in the network's dnsmasq. */
  readonly dnsRecords: Readonly<Record<string, readonly string[]>>;
  /** When set, the network's DHCP domain is moved to this value (off by default). */
  readonly dhcpDomain?: string;
  /** Take the records' names off records on IPs they do not list (stale ones); off by default. */
  readonly removeStaleRecords: boolean;
}

export interface DownstreamClusterSpec extends ClusterSettings {
  /** Opt-in to the insecure registration command (skips CA verification). */
  readonly insecureRegistration: boolean;
}

export interface RancherSettings {
  /**
   * https://<hostname>. Unset only where the stack registers no cluster with Rancher
   * (`deploy.rancherClusters` false) and does not name it; nothing then answers or protects
   * Rancher's host by name.
   */
  readonly url?: string;
  /** The host of `url`, in lowercase; set exactly when `url` is. */
  readonly hostname?: string;
  /** PEM of the CA that signed Rancher's certificate (self-signed in the seeds). */
  readonly caCertificate?: string;
  readonly downstreamClusters: readonly DownstreamClusterSpec[];
}

export interface NodeLocalDnsSettings {
  readonly enabled: boolean;
  readonly ip: string;
}

export interface DnsSettings {
  /** hostname -> addresses answered by the cluster DNS itself. */
  readonly staticHosts: Readonly<Record<string, readonly string[]>>;
  /** Search domains inherited from nodes whose names must fail fast with NXDOMAIN ("local"). */
  readonly neutralizedSearchDomains: readonly string[];
  readonly nodeLocal: NodeLocalDnsSettings;
  /**
   * Resolvers the cluster DNS forwards to; each must answer HINFO probes (seed 004). Empty only
   * where no cluster DNS is rendered (`deploy.clusterDns` and `rancherClusters` off).
   */
  readonly upstreamResolvers: readonly string[];
  /** Namespaces that get the DNS-egress NetworkPolicy, in stack order. */
  readonly policyNamespaces: readonly DnsPolicyNamespace[];
}

/**
 * One namespace of `dns.policyNamespaces`. The policy is an allowance where the namespace's
 * egress is already restricted; `isolate` opts a namespace in to becoming default-deny egress
 * except DNS (never Rancher's or RKE2's own namespaces).
 */
export interface DnsPolicyNamespace {
  readonly name: string;
  readonly isolate: boolean;
}

export interface NodePreparationSettings {
  /** NetworkManager `unmanaged-devices` interface-name patterns. */
  readonly unmanagedDevices: readonly string[];
  /** Bring kube-ipvs0 up; kube-proxy keeps it DOWN by design, so this is off by default. */
  readonly bringUpKubeIpvs: boolean;
  /**
   * firewalld: `disable` (RKE2's advice: disabled, and stopped where that flushes nothing else)
   * or `keep` (left as found; the operator opens RKE2's and the CNI's ports, and every node's
   * ports preflight checks the TCP ones from its peers).
   */
  readonly firewalld: "disable" | "keep";
}

/**
 * Which parts this stack converges (stack keys `deploy.*`, each true by default); a lab without
 * Kubernetes turns the cluster parts off. A part turned off declares nothing, nothing waits for
 * it, `render` writes none of its files, and the keys only it reads are not required (given, they
 * are reported as unused; infra/config/deploy-parts.ts lists which part reads which key).
 */
export interface DeploySelection {
  /** The libvirt DNS records on the KVM host. */
  readonly libvirtDnsRecords: boolean;
  /** Every node's preparation, management and downstream, and the server ports preflight. */
  readonly nodePreparation: boolean;
  /**
   * RKE2 on every node of the management cluster, servers and agents alike (the key keeps its
   * name for existing stacks): config.yaml, install and start, the servers' join gates.
   */
  readonly rke2Servers: boolean;
  /**
   * The management cluster's DNS fix and the upstream resolver preflight on its first server;
   * with Rancher, this or `rancherClusters` computes the downstream clusters' chartValues.
   */
  readonly clusterDns: boolean;
  /**
   * The Rancher provider and each downstream cluster: its ClusterV2, whose chartValues carry
   * the DNS fix whatever `clusterDns` says, and its nodes' registration.
   */
  readonly rancherClusters: boolean;
}

export interface EnvironmentModel {
  readonly stack: string;
  /**
   * The stack whose Rancher this one registers its clusters with (`managementStack`), when its
   * Rancher values were read from there; unset in the stack that owns Rancher.
   */
  readonly managementStack?: string;
  readonly deploy: DeploySelection;
  readonly libvirt: LibvirtSettings;
  readonly nodes: readonly NodeSpec[];
  readonly management: ClusterSettings;
  readonly rancher?: RancherSettings;
  readonly dns: DnsSettings;
  readonly nodePreparation: NodePreparationSettings;
}

/** Names of the stack config keys that must hold Pulumi secrets. */
export const SECRET_KEYS = [
  "sshPrivateKey",
  "rke2Token",
  "rancherToken",
  "kubeconfig",
  "registryAuth",
] as const;
export type SecretKey = (typeof SECRET_KEYS)[number];

/** The default NetworkManager unmanaged list: the seed's devices plus RKE2's documented ones. */
export const DEFAULT_UNMANAGED_DEVICES: readonly string[] = [
  "kube-ipvs0",
  "cali*",
  "vxlan.calico",
  "vxlan-v6.calico",
  "tunl*",
  "flannel*",
  "wireguard.cali",
  "wg-v6.cali",
];

export function serversOf(model: EnvironmentModel): NodeSpec[] {
  return model.nodes.filter((n) => n.cluster === MANAGEMENT_CLUSTER && n.roles.includes("server"));
}

export function nodesOfCluster(model: EnvironmentModel, cluster: string): NodeSpec[] {
  return model.nodes.filter((n) => n.cluster === cluster);
}
