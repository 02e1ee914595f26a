import { StackValidationPolicy } from "@pulumi/policy";
import { dependsOn } from "./dependencies";
import {
  NODE_PREPARATION,
  RANCHER_NODE_REGISTRATION,
  REMOTE_COMMAND_TYPE,
  RKE2_NODE_START,
} from "../../components/model";
import { objectProp } from "./props";

/** Remote commands that install or start RKE2, or register a node with Rancher. */
const JOINS_CLUSTER =
  /get\.rke2\.io|install\.sh|rke2-(server|agent)|system-agent-install|--ca-checksum|cattle-cluster-agent/;

export const nodePreparedBeforeClusterJoin: StackValidationPolicy = {
  name: "node-prepared-before-cluster-join",
  description: "RKE2 install and Rancher registration on a node depend on that node's preparation.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const preparations = args.resources.filter((r) => r.type === NODE_PREPARATION.token);
    const joins = args.resources.filter(
      (r) =>
        r.type === RKE2_NODE_START.token ||
        r.type === RANCHER_NODE_REGISTRATION.token ||
        (r.type === REMOTE_COMMAND_TYPE && JOINS_CLUSTER.test(String(r.props.create ?? ""))),
    );
    for (const cmd of joins) {
      const host = objectProp(cmd.props, "connection")?.host;
      const prep = preparations.find((p) => objectProp(p.props, "connection")?.host === host);
      if (!prep) {
        reportViolation(
          `${cmd.name} joins ${String(host)} to a cluster, but the stack does not prepare that node.`,
          cmd.urn,
        );
      } else if (!dependsOn(cmd, prep)) {
        reportViolation(
          `${cmd.name} joins ${String(host)} to a cluster without depending on ${prep.name}: Rocky's REJECT rules ` +
            "would still block etcd peers on 2380 and pods' ClusterIP traffic (seed 003).",
          cmd.urn,
        );
      }
    }
  },
};
