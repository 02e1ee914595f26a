/**
 * Values every section reads the same way: addresses, networks, host names, roles, and where a
 * node or cluster sits in the stack file, and the facts the estate checks read.
 */
import {
  ClusterSettings,
  DnsSettings,
  DownstreamRole,
  LibvirtSettings,
  MANAGEMENT_CLUSTER,
  NodeRole,
  NodeSpec,
  RancherSettings,
  Cidr,
  isIpv4,
  networkOfPrefix,
  parseCidr,
} from "../../components/model";
import { ConfigReader } from "./reader";
import { DOWNSTREAM_ROLES, NODE_ROLES } from "./stack-keys";
import { RawStackConfig } from "./raw-config";

const HOSTNAME =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;
export const K8S_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// The model's unions and the declaration's words are the same lists.
export const ALL_ROLES: readonly NodeRole[] = NODE_ROLES;
export const DOWNSTREAM: readonly DownstreamRole[] = DOWNSTREAM_ROLES;

export function isHostname(text: string): boolean {
  return HOSTNAME.test(text);
}

/** A list item or other value no declaration reads: a string, then an IPv4 address. */
export function readIp(r: ConfigReader, value: unknown, path: string): string | undefined {
  return ipOf(r, r.string(value, path), path);
}

/** `text`, read through the declaration, as an IPv4 address. */
export function ipOf(r: ConfigReader, s: string | undefined, path: string): string | undefined {
  if (s === undefined) return undefined;
  if (!isIpv4(s)) {
    r.problem(
      path,
      `"${s}" is not an IPv4 address; write four dotted numbers, e.g. 192.168.122.21.`,
    );
    return undefined;
  }
  return s;
}

/** `text`, read through the declaration, as a network in CIDR form. */
export function cidrOf(r: ConfigReader, text: string | undefined, path: string): Cidr | undefined {
  if (text === undefined) return undefined;
  const cidr = parseCidr(text);
  if (!cidr) {
    // Host bits set (10.100.5.0/16): name the network the prefix gives.
    const network = networkOfPrefix(text);
    r.problem(
      path,
      `"${text}" is not a network in CIDR form; ` +
        (network
          ? `its address has host bits set for /${network.split("/")[1]}: write the network address, ${network}, or a longer prefix.`
          : "write the network address and prefix, e.g. 10.42.0.0/16."),
    );
  }
  return cidr;
}

/** `s`, read through the declaration, as a DNS name, lowercased. */
export function hostnameOf(
  r: ConfigReader,
  s: string | undefined,
  path: string,
): string | undefined {
  if (s === undefined) return undefined;
  if (!isHostname(s)) {
    r.problem(
      path,
      `"${s}" is not a valid DNS name; use letters, digits and hyphens in dot-separated labels of at most 63 characters.`,
    );
    return undefined;
  }
  return s.toLowerCase();
}

/** The inputs of the estate checks, as validateEnvironment has read them. */
export interface EstateFacts {
  readonly raw: RawStackConfig;
  readonly libvirt: LibvirtSettings | undefined;
  readonly clusters: readonly ClusterSettings[];
  readonly nodes: readonly NodeSpec[];
  readonly dns: DnsSettings;
  readonly rancher: RancherSettings | undefined;
}

/** The stack key of a cluster's settings: `rke2` or `rancher.downstreamClusters[i]`. */
export function clusterPath(cluster: ClusterSettings, index: number): string {
  return cluster.name === MANAGEMENT_CLUSTER ? "rke2" : `rancher.downstreamClusters[${index - 1}]`;
}

/** Where a node is listed in the stack's `nodes`, matched by its (unique, lowercase) name. */
export function nodeIndex(values: RawStackConfig["values"], node: NodeSpec): number {
  const list = Array.isArray(values.nodes) ? (values.nodes as unknown[]) : [];
  return list.findIndex((item) => {
    const name = (item as { name?: unknown } | null)?.name;
    return typeof name === "string" && name.trim().toLowerCase() === node.name;
  });
}
