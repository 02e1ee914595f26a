import { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { dependsOn, unorderedPairs } from "./dependencies";
import { RANCHER_CLUSTER_SYNC_TYPE, RANCHER_NODE_REGISTRATION_TYPE } from "./resource-types";

const clusterOf = (r: PolicyResource) => String(r.props.cluster ?? "");
const nodeOf = (r: PolicyResource) => String(r.props.node ?? r.name);
const rolesOf = (r: PolicyResource): string[] =>
  Array.isArray(r.props.roles) ? r.props.roles.map(String) : [];
const isServer = (r: PolicyResource) =>
  rolesOf(r).includes("etcd") || rolesOf(r).includes("controlplane");

export const rancherNodesRegisterAfterFirstSync: StackValidationPolicy = {
  name: "rancher-nodes-register-after-first-sync",
  description:
    "In each Rancher downstream cluster one etcd and control-plane node registers first; every other node registers after a ClusterSync that waits for an earlier registration, and etcd or control-plane nodes register one at a time.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const registrations = args.resources.filter((r) => r.type === RANCHER_NODE_REGISTRATION_TYPE);
    const syncs = args.resources.filter((r) => r.type === RANCHER_CLUSTER_SYNC_TYPE);
    for (const cluster of new Set(registrations.map(clusterOf))) {
      const members = registrations.filter((r) => clusterOf(r) === cluster);
      // A sync that waits for a registration of this cluster returns once the cluster is active
      // with that node in it; whatever waits for the sync registers into a running cluster.
      const gates = syncs.filter((s) => members.some((r) => dependsOn(s, r)));
      const afterGate = (r: PolicyResource) => gates.some((s) => dependsOn(r, s));
      const initial = members.filter((r) => !afterGate(r));
      if (initial.length > 1) {
        reportViolation(
          `${initial.map(nodeOf).join(", ")} register into ${cluster} without waiting for a ClusterSync after ` +
            "another node of the cluster: Rancher gives later nodes no plan until the first node has initialised " +
            "the control plane and the cluster agent has connected, so they sit unprovisioned and look like " +
            `"agent add failed" (seed 000). Register one etcd and control-plane node first, wait for it with ` +
            "rancher2.ClusterSync, then register the others.",
          initial[1].urn,
        );
      } else if (
        initial.length === 1 &&
        !["etcd", "controlplane"].every((role) => rolesOf(initial[0]).includes(role))
      ) {
        reportViolation(
          `the first node to register into ${cluster}, ${nodeOf(initial[0])}, has roles ` +
            `${rolesOf(initial[0]).join(", ") || "(none)"}: the first node initialises the cluster, so it must carry ` +
            "etcd and controlplane; without them the cluster never becomes active, its ClusterSync waits out its " +
            "timeout and no later node gets a plan (seed 000).",
          initial[0].urn,
        );
      }
      for (const [a, b] of unorderedPairs(members.filter((r) => afterGate(r) && isServer(r)))) {
        reportViolation(
          `${nodeOf(a)} and ${nodeOf(b)} (etcd/controlplane) may register into ${cluster} at the same time: ` +
            "RKE2 servers must join one at a time, because etcd admits one learner and a second join beside it " +
            "retries on 'too many learner members in cluster' for as long as the first is a learner, forever when it " +
            "never catches up (seed 003). Make each wait for the previous one's ClusterSync.",
          b.urn,
        );
      }
    }
  },
};
