/**
 * What the Rancher registration-order policies share: per downstream cluster, its registrations,
 * the gates (a ClusterWait or ClusterSync that waits for one of its registrations: whatever waits
 * for a gate waits for the cluster to be active), and the first group (registrations behind no
 * gate). Rancher's planner (rancher/rancher@v2.14.3 pkg/capr/planner/planner.go) plans no node
 * until an etcd, a controlplane and a worker node are registered (clusterIsSane), and gives a new
 * machine its first plan at once (reconcile), so etcd registrations need a gate between them.
 */
import { PolicyResource } from "@pulumi/policy";
import { dependsOn } from "./dependencies";
import {
  RANCHER_CLUSTER_SYNC_TYPE,
  RANCHER_CLUSTER_WAIT,
  RANCHER_NODE_REGISTRATION,
} from "../../components/model";

export interface ClusterRegistrations {
  readonly cluster: string;
  readonly registrations: readonly PolicyResource[];
  readonly gates: readonly PolicyResource[];
  /** Registrations that wait for no gate: they must hold etcd, controlplane and worker. */
  readonly firstGroup: readonly PolicyResource[];
}

/** The roles Rancher's planner needs registered before it plans any node (clusterIsSane). */
export const STARTING_ROLES = ["etcd", "controlplane", "worker"];

export const nodeOf = (r: PolicyResource): string => String(r.props.node ?? r.name);
export const rolesOf = (r: PolicyResource): string[] =>
  Array.isArray(r.props.roles) ? r.props.roles.map(String) : [];
const clusterOf = (r: PolicyResource) => String(r.props.cluster ?? "");

/** Whether `later` waits for a gate that waits for `earlier`. */
export function gateBetween(
  gates: readonly PolicyResource[],
  earlier: PolicyResource,
  later: PolicyResource,
): boolean {
  return gates.some((g) => dependsOn(later, g) && dependsOn(g, earlier));
}

export function registrationsByCluster(
  resources: readonly PolicyResource[],
): ClusterRegistrations[] {
  const registrations = resources.filter((r) => r.type === RANCHER_NODE_REGISTRATION.token);
  const waits = resources.filter(
    (r) => r.type === RANCHER_CLUSTER_SYNC_TYPE || r.type === RANCHER_CLUSTER_WAIT.token,
  );
  return [...new Set(registrations.map(clusterOf))].map((cluster) => {
    const members = registrations.filter((r) => clusterOf(r) === cluster);
    const gates = waits.filter((w) => members.some((r) => dependsOn(w, r)));
    const firstGroup = members.filter((r) => !gates.some((g) => dependsOn(r, g)));
    return { cluster, registrations: members, gates, firstGroup };
  });
}
