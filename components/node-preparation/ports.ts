/**
 * The ports RKE2 and its CNIs need open between nodes, from rancher/rke2-docs@9477b7b1df1f:
 * docs/install/requirements.md ("Inbound Network Rules", "CNI Specific Inbound Network Rules").
 * The NodePort range (30000-32767 by default) is left out: its use is the workloads'. Pure.
 */
import type { Cni } from "../model";

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

/**
 * The TCP ports one node must reach on a peer of its cluster: what a connect can check. (A UDP
 * port gives no answer whether open or dropped, so those are left to the operators.)
 */
export function tcpPortsToPeer(
  cni: Cni,
  fromServer: boolean,
  toServer: boolean,
): readonly number[] {
  const applies = (side: "all" | "servers", isServer: boolean) => side === "all" || isServer;
  return clusterPortRules(cni)
    .filter((r) => r.protocol === "tcp" && applies(r.from, fromServer) && applies(r.to, toServer))
    .map((r) => r.port);
}

/** Whether a node runs RKE2's server: a management server, or a downstream etcd or control plane node. */
export function runsRke2Server(roles: readonly string[]): boolean {
  return roles.some((r) => r === "server" || r === "etcd" || r === "controlplane");
}
