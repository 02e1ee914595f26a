/**
 * RKE2's settings vocabulary, the one place its facts are written, each cited to upstream:
 *   - the config.yaml keys the product manages, with the stack key that sets each;
 *   - what RKE2 uses for a setting no file sets, per release line, and the settings a running
 *     cluster cannot change. A key the files leave out has RKE2's default, never the stack's: on
 *     a hand-built estate with no `cni:` line the CNI is canal, whatever the stack's default is;
 *   - the settings refused in pass-through, each with why;
 *   - the ports RKE2 and its CNIs listen on.
 * The validator (infra/config/), the adoption planner (./config-adoption.ts), node preparation
 * and docs/configuration.md read them from here.
 */
import { type Cni, nthAddress, parseCidr } from "../model";
import { knownProfile, RKE2_PROFILES } from "../node-preparation/profile";
import { parseRke2Release } from "./releases";

// ---------------------------------------------------------------------------------------------
// The keys the product manages
// ---------------------------------------------------------------------------------------------

/**
 * The config.yaml keys the product renders, each with the stack key (or secret) that sets it.
 * Pass-through settings may not name them: the stack key is the one place to change them.
 * (`*-arg` lists are managed per flag: see ARG_LIST_FLAGS_MANAGED.)
 */
export const MANAGED_RKE2_KEYS: Readonly<Record<string, string>> = {
  server:
    "rke2.registrationAddress (joining servers and agents register at the first server by default)",
  token: "the rke2Token secret",
  "token-file": "the rke2Token secret",
  "agent-token": "the rke2Token secret",
  "node-name": "nodes[i].name",
  "node-ip": "nodes[i].ip",
  cni: "rke2.cni",
  "tls-san": "rke2.tlsSan",
  "cluster-cidr": "rke2.clusterCidr",
  "service-cidr": "rke2.serviceCidr",
  "cluster-dns": "rke2.serviceCidr (kube-dns at its 10th address)",
  "cluster-domain": "rke2.clusterDomain",
  "service-node-port-range": "rke2.nodePortRange",
  "system-default-registry": "rke2.privateRegistry",
  "etcd-snapshot-schedule-cron": "rke2.etcdSnapshot.scheduleCron",
  "etcd-snapshot-retention": "rke2.etcdSnapshot.retention",
};

/** Flags inside `*-arg` lists the product renders, with the stack key that sets each. */
export const ARG_LIST_FLAGS_MANAGED: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "kube-proxy-arg": { "proxy-mode": "rke2.kubeProxyMode" },
  "kubelet-arg": { "cluster-dns": "dns.nodeLocal (kubelet's cluster-dns in IPVS mode)" },
};

/** The flag of one `*-arg` entry ("max-pods=250" -> "max-pods"). */
export function argFlag(entry: unknown): string {
  return String(entry).split("=")[0].replace(/^-+/, "");
}

/** Whether a config.yaml key is an argument list whose entries are merged by flag. */
export function isArgList(key: string): boolean {
  return key.endsWith("-arg");
}

// ---------------------------------------------------------------------------------------------
// RKE2's defaults per release line, and what a running cluster cannot change
// ---------------------------------------------------------------------------------------------

/** How a default depends on the other settings and the host. */
interface DefaultContext {
  readonly settings: ReadonlyMap<string, { readonly value: unknown }>;
  readonly hostName: string;
}
type DefaultRule = string | ((ctx: DefaultContext) => string | undefined);

const SERVICE_CIDR_DEFAULT = "10.43.0.0/16";

/**
 * The defaults of the release lines the product supports, read at rancher/rke2@v1.35.7+rke2r1
 * and the k3s commit it pins (k3s-io/k3s@7464a828):
 *   - cni: canal (rancher/rke2@v1.35.7+rke2r1:pkg/cli/cmds/server.go, `cli.NewStringSlice("canal")`);
 *   - cluster-cidr 10.42.0.0/16, service-cidr 10.43.0.0/16 when unset, cluster-dns the 10th
 *     address of the service CIDR (k3s pkg/cli/server/server.go, defaultClusterCIDR and
 *     GetIndexedIP(svcCIDR, 10); pkg/util/net.go GetDefaultAddresses; IPv4 nodes);
 *   - cluster-domain cluster.local, service-node-port-range 30000-32767,
 *     etcd-snapshot-schedule-cron "0 *\/12 * * *", etcd-snapshot-retention 5 (k3s
 *     pkg/cli/cmds/server.go, the flags' Value);
 *   - data-dir /var/lib/rancher/rke2 (rancher/rke2@v1.35.7+rke2r1:pkg/cli/cmds/server.go, rke2Path);
 *   - node-name: the host name, lowercased (k3s pkg/util/net.go GetHostnameAndIPs);
 *   - system-default-registry: none (k3s pkg/cli/cmds/server.go).
 * node-ip has no fixed default (the address of the default route's interface, k3s
 * pkg/util/net.go): the caller reads it from etcd's peer URL instead.
 */
const DEFAULTS_V1_35: Readonly<Record<string, DefaultRule>> = {
  cni: "canal",
  "cluster-cidr": "10.42.0.0/16",
  "service-cidr": SERVICE_CIDR_DEFAULT,
  // The 10th address of the service CIDR in effect.
  "cluster-dns": ({ settings }) => {
    const cidr = parseCidr(String(settings.get("service-cidr")?.value ?? SERVICE_CIDR_DEFAULT));
    return cidr ? nthAddress(cidr, 10) : undefined;
  },
  "cluster-domain": "cluster.local",
  "service-node-port-range": "30000-32767",
  "etcd-snapshot-schedule-cron": "0 */12 * * *",
  "etcd-snapshot-retention": "5",
  "data-dir": "/var/lib/rancher/rke2",
  // The host name, lowercased.
  "node-name": ({ hostName }) => hostName.toLowerCase(),
  "system-default-registry": "",
};

/** Release lines whose defaults are those above (the same flags, the same values). */
const DEFAULTS_BY_LINE: Readonly<Record<string, Readonly<Record<string, DefaultRule>>>> = {
  "1.34": DEFAULTS_V1_35,
  "1.35": DEFAULTS_V1_35,
  "1.36": DEFAULTS_V1_35,
};

export const RKE2_DEFAULT_DATA_DIR = "/var/lib/rancher/rke2";

/** The release line (`1.35`) of a release, or undefined. */
export function releaseLine(release: string): string | undefined {
  const r = parseRke2Release(release);
  return r ? `${r.major}.${r.minor}` : undefined;
}

/** The release lines whose defaults are known. */
export const KNOWN_DEFAULT_LINES = Object.keys(DEFAULTS_BY_LINE);

/**
 * RKE2's value for `key` when no file or variable sets it, on a node running `release`, or
 * undefined when RKE2 has no fixed default for it (node-ip, the `*-arg` lists) or the release
 * line is unknown.
 */
export function rke2DefaultOf(
  key: string,
  release: string,
  ctx: DefaultContext,
): string | undefined {
  const line = releaseLine(release);
  const rule = line === undefined ? undefined : DEFAULTS_BY_LINE[line]?.[key];
  if (rule === undefined) return undefined;
  return typeof rule === "string" ? rule : rule(ctx);
}

/**
 * Settings a running cluster cannot change, with the stack key that adopts the running value:
 *   - the CNI and the cluster and service CIDRs: "RKE2 does not support changing the primary
 *     CNI Plugin, CNI backend, or cluster/service CIDRs on a running cluster"
 *     (rancher/rke2-docs@9477b7b1:docs/networking/basic_network_options.md);
 *   - cluster-dns and cluster-domain, with the CIDRs, are values all servers must share
 *     (rancher/rke2-docs@9477b7b1:docs/reference/server_config.md, Critical Configuration
 *     Values; k3s-io/k3s@7464a828:pkg/daemons/config/types.go CriticalControlArgs), checked only
 *     when a server first joins (pkg/cluster/bootstrap.go compareConfig), so a change on a
 *     running server goes unnoticed and splits the cluster's settings;
 *   - data-dir holds the server's etcd data: another one starts an empty member;
 *   - node-ip is the address of the server's etcd peer URL (k3s pkg/etcd/etcd.go: the member's
 *     address is the first node-ip; nothing updates a registered peer URL on restart, and Test
 *     then fails with "this server is not a member of the etcd cluster"; only cluster-reset's
 *     Reset calls MemberUpdate). A new address is a membership change, which the product does
 *     not perform.
 */
export const FIXED_ON_RUNNING_CLUSTER: Readonly<Record<string, string>> = {
  cni: "rke2.cni",
  "cluster-cidr": "rke2.clusterCidr",
  "service-cidr": "rke2.serviceCidr",
  "cluster-dns": "rke2.serviceCidr",
  "cluster-domain": "rke2.clusterDomain",
  "data-dir": "(none: the product never sets data-dir)",
  "node-ip": "nodes[i].ip",
};

// ---------------------------------------------------------------------------------------------
// Pass-through settings refused
// ---------------------------------------------------------------------------------------------

/** An RKE2 setting name, or one written `name+` to append to its list. */
export const RKE2_FLAG = /^[a-z0-9][a-z0-9-]*[a-z0-9]\+?$/;

/**
 * Pass-through settings that would reset, move or split etcd, rename the node, or undo a fix
 * the stack declares, each with why: written into every server's config.yaml and applied by a
 * restart, each one does at once on every server what an operator does once, by hand, if ever.
 */
export const REFUSED_PASS_THROUGH: Readonly<
  Record<string, (value: unknown) => string | undefined>
> = {
  "data-dir": () =>
    "moves RKE2's data: a server restarted with another data-dir starts an empty etcd member, or a " +
    "new cluster on the first server. The product reads each server's data-dir from its files; " +
    "move data by hand, one stopped server at a time, if ever.",
  "cluster-reset": () =>
    "resets etcd to a one-member cluster at the next start of every server it reaches; it is a " +
    "recovery step run by hand on one stopped server (rke2 server --cluster-reset), never a setting.",
  "cluster-reset-restore-path": () =>
    "restores etcd from a snapshot at the next start; it is a recovery step run by hand on one " +
    "stopped server (rke2 server --cluster-reset --cluster-reset-restore-path=...), never a setting.",
  // rancher/rke2@v1.35.7+rke2r1:pkg/cli/cmds/profile_linux.go validateProfile (the same v1.33 to v1.36).
  profile: (value) =>
    knownProfile(String(value)) !== undefined
      ? undefined
      : `"${String(value)}" is not a profile RKE2 knows (${RKE2_PROFILES.join(", ")}): RKE2 exits ` +
        `at start ("invalid value provided for --profile flag").`,
  "with-node-id": () =>
    "appends a random suffix to the node name: each server would register a new Node and etcd " +
    "member, and its join gate would wait for a name that never comes.",
  "disable-kube-proxy": (value) =>
    String(value) === "false"
      ? undefined
      : "removes kube-proxy, which the stack configures (rke2.kubeProxyMode; NodeLocalDNS in IPVS " +
        "mode depends on it), and with it every Service address on the nodes.",
  disable: (value) =>
    (Array.isArray(value) ? value : [value]).some((v) =>
      String(v)
        .split(",")
        .map((x) => x.trim())
        .includes("rke2-coredns"),
    )
      ? "lists rke2-coredns: the cluster would have no DNS, and the CoreDNS fix the stack delivers " +
        "(a HelmChartConfig of rke2-coredns, seed 000) would have no chart to apply to."
      : undefined,
};

// ---------------------------------------------------------------------------------------------
// Ports, from rancher/rke2-docs@9477b7b1df1f: docs/install/requirements.md ("Inbound Network
// Rules", "CNI Specific Inbound Network Rules"). The NodePort range (30000-32767 by default) is
// left out: its use is the workloads'.
// ---------------------------------------------------------------------------------------------

export interface PortRule {
  readonly port: number;
  readonly protocol: "tcp" | "udp";
  readonly what: string;
  /** Which nodes connect: every node, or the servers only. */
  readonly from: "all" | "servers";
  /** Which nodes listen: every node, or the servers only. */
  readonly to: "all" | "servers";
}

const rule = (
  port: number,
  protocol: "tcp" | "udp",
  what: string,
  from: "all" | "servers" = "all",
  to: "all" | "servers" = "all",
): PortRule => ({ port, protocol, what, from, to });

export const RKE2_PORT_RULES: readonly PortRule[] = [
  rule(6443, "tcp", "Kubernetes API", "all", "servers"),
  rule(9345, "tcp", "RKE2 supervisor API", "all", "servers"),
  rule(10250, "tcp", "kubelet"),
  rule(2379, "tcp", "etcd client port", "servers", "servers"),
  rule(2380, "tcp", "etcd peer port", "servers", "servers"),
  rule(2381, "tcp", "etcd metrics port", "servers", "servers"),
];

export const CNI_PORT_RULES: Readonly<Record<Cni, readonly PortRule[]>> = {
  canal: [
    rule(8472, "udp", "Canal VXLAN"),
    rule(9099, "tcp", "Canal health checks"),
    rule(51820, "udp", "Canal WireGuard IPv4"),
    rule(51821, "udp", "Canal WireGuard IPv6"),
  ],
  cilium: [
    rule(4240, "tcp", "Cilium health checks"),
    rule(8472, "udp", "Cilium VXLAN"),
    rule(51871, "udp", "Cilium WireGuard"),
  ],
  calico: [
    rule(179, "tcp", "Calico BGP"),
    rule(4789, "udp", "Calico VXLAN"),
    rule(5473, "tcp", "Calico Typha"),
    rule(9098, "tcp", "Calico Typha health checks"),
    rule(9099, "tcp", "Calico health checks"),
  ],
  flannel: [rule(4789, "udp", "Flannel VXLAN")],
};

/** Every port a node of a cluster with this CNI listens on, RKE2's first. */
export function clusterPortRules(cni: Cni): readonly PortRule[] {
  return [...RKE2_PORT_RULES, ...CNI_PORT_RULES[cni]];
}
