/**
 * What RKE2 uses for a setting no file sets, per release line, and the settings a running
 * cluster cannot change. A key the files leave out has RKE2's default, never the stack's: on a
 * hand-built estate with no `cni:` line the CNI is canal, whatever the stack's default is.
 */
import { nthAddress, parseCidr } from "../model";
import { parseRke2Release } from "./releases";

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
