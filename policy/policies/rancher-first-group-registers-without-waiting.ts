import { StackValidationPolicy } from "@pulumi/policy";
import {
  nodeOf,
  registrationsByCluster,
  rolesOf,
  STARTING_ROLES,
} from "./rancher-registration-order";

export const rancherFirstGroupRegistersWithoutWaiting: StackValidationPolicy = {
  name: "rancher-first-group-registers-without-waiting",
  description:
    "In each Rancher downstream cluster an etcd, a controlplane and a worker node register before any step waits for the cluster.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const { cluster, registrations, firstGroup } of registrationsByCluster(args.resources)) {
      const roles = new Set(firstGroup.flatMap(rolesOf));
      const missing = STARTING_ROLES.filter((role) => !roles.has(role));
      // A cluster without one of the roles at all is the other policy's finding.
      const declared = new Set(registrations.flatMap(rolesOf));
      if (missing.length === 0 || !missing.every((role) => declared.has(role))) continue;
      const held = registrations.filter((r) => !firstGroup.includes(r));
      const blocked =
        held.find((r) => missing.some((role) => rolesOf(r).includes(role))) ?? held[0];
      reportViolation(
        `${cluster}: ${blocked ? nodeOf(blocked) : "a node"} (${missing.join(", ")}) registers only after a wait for ` +
          `the cluster, but the nodes before it (${firstGroup.map(nodeOf).join(", ") || "none"}) lack ` +
          `${missing.join(", ")}: Rancher delivers no plan until an etcd, a controlplane and a worker node are ` +
          "registered (rancher/rancher@v2.14.3 pkg/capr/planner/planner.go, clusterIsSane), so the wait never ends " +
          "and the cluster never starts (seed 000). Register the first etcd, controlplane and worker nodes together, " +
          "then wait for the cluster.",
        (blocked ?? registrations[0]).urn,
      );
    }
  },
};
