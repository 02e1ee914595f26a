import { StackValidationPolicy } from "@pulumi/policy";
import { gateBetween, nodeOf, registrationsByCluster, rolesOf } from "./rancher-registration-order";

export const rancherEtcdRegistrationsOneAtATime: StackValidationPolicy = {
  name: "rancher-etcd-registrations-one-at-a-time",
  description:
    "In each Rancher downstream cluster every two etcd registrations have a wait for the cluster between them.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const { cluster, registrations, gates, firstGroup } of registrationsByCluster(
      args.resources,
    )) {
      const etcd = registrations.filter((r) => rolesOf(r).includes("etcd"));
      etcd.forEach((a, i) => {
        for (const b of etcd.slice(i + 1)) {
          // Two etcd nodes in the first group are rancher-first-group-one-etcd's finding.
          if (firstGroup.includes(a) && firstGroup.includes(b)) continue;
          if (gateBetween(gates, a, b) || gateBetween(gates, b, a)) continue;
          reportViolation(
            `${nodeOf(a)} and ${nodeOf(b)} (etcd) may register into ${cluster} without a sync between them: ` +
              "Rancher gives a new machine its first plan at once, whatever the concurrency settings " +
              "(rancher/rancher@v2.14.3 pkg/capr/planner/planner.go, reconcile), so both join etcd together and " +
              "the second retries on 'too many learner members in cluster' for as long as the first is a learner, " +
              "forever when it never catches up (seed 003). Register each further etcd node after the previous " +
              "one's join gate and ClusterSync.",
            b.urn,
          );
        }
      });
    }
  },
};
