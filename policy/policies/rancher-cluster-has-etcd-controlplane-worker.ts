import { StackValidationPolicy } from "@pulumi/policy";
import { registrationsByCluster, rolesOf, STARTING_ROLES } from "./rancher-registration-order";

export const rancherClusterHasEtcdControlplaneWorker: StackValidationPolicy = {
  name: "rancher-cluster-has-etcd-controlplane-worker",
  description:
    "Each Rancher downstream cluster registers at least one etcd, one controlplane and one worker node.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const { cluster, registrations } of registrationsByCluster(args.resources)) {
      const missing = STARTING_ROLES.filter(
        (role) => !registrations.some((r) => rolesOf(r).includes(role)),
      );
      if (missing.length === 0) continue;
      reportViolation(
        `${cluster} registers no node with role ${missing.join(", ")}: Rancher's planner delivers no plan to any ` +
          "node until an etcd, a controlplane and a worker node are registered (rancher/rancher@v2.14.3 " +
          "pkg/capr/planner/planner.go, clusterIsSane), so every node sits unprovisioned (seed 000). Add a node " +
          `with ${missing.join(", ")}.`,
        registrations[0].urn,
      );
    }
  },
};
