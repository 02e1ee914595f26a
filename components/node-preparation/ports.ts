/**
 * The ports RKE2 and its CNIs need open between nodes, as node preparation checks them. The
 * rules themselves are RKE2's facts (../rke2-cluster/settings.ts). Pure.
 */
import type { Cni } from "../model";
import {
  clusterPortRules,
  CNI_PORT_RULES,
  type PortRule,
  RKE2_PORT_RULES,
} from "../rke2-cluster/settings";

export { clusterPortRules, CNI_PORT_RULES, type PortRule, RKE2_PORT_RULES };

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
