import { StackValidationPolicy } from "@pulumi/policy";
import { nodeOf, registrationsByCluster, rolesOf } from "./rancher-registration-order";

export const rancherFirstGroupOneEtcd: StackValidationPolicy = {
  name: "rancher-first-group-one-etcd",
  description:
    "In each Rancher downstream cluster the nodes that register before the first wait for the cluster hold exactly one etcd node.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const { cluster, firstGroup } of registrationsByCluster(args.resources)) {
      const etcd = firstGroup.filter((r) => rolesOf(r).includes("etcd"));
      if (etcd.length <= 1) continue;
      reportViolation(
        `${cluster}: ${etcd.map(nodeOf).join(", ")} are etcd nodes registering together before the cluster is up: ` +
          "Rancher elects the init node among them by machine name, effectively at random (rancher/rancher@v2.14.3 " +
          "pkg/capr/planner/initnode.go, electInitNode), and plans the others at once, so they join etcd together " +
          "and RKE2 retries on 'too many learner members in cluster' (seed 003). Register one etcd node first; " +
          "register each other one after a sync.",
        etcd[1].urn,
      );
    }
  },
};
