import { StackValidationPolicy } from "@pulumi/policy";
import { unorderedPairs } from "./dependencies";
import { RKE2_NODE_START } from "../../components/model";
import { objectProp } from "./props";

export const rke2ServersJoinOneAtATime: StackValidationPolicy = {
  name: "rke2-servers-join-one-at-a-time",
  description:
    "Every two RKE2 server starts have a dependency path between them, so servers join one at a time.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const starts = args.resources.filter(
      (r) => r.type === RKE2_NODE_START.token && r.props.role === "server",
    );
    for (const [a, b] of unorderedPairs(starts)) {
      const host = (r: typeof a) => String(objectProp(r.props, "connection")?.host ?? r.name);
      // A joining server retries on etcd's "too many learner members in cluster" (k3s-io/k3s#7000,
      // fixed by k3s-io/k3s#7351), so the second join waits for as long as the first is a learner.
      reportViolation(
        `servers ${host(a)} and ${host(b)} may start at the same time: etcd admits one learner at a time, so the ` +
          "second retries on 'too many learner members in cluster' for as long as the first is a learner, and forever " +
          "when the first never catches up (seed 003: a REJECT rule blocked etcd's peer port 2380). Make each server " +
          "wait for the previous server's join gate, which shows a stuck learner and starts no further join.",
        b.urn,
      );
    }
  },
};
