import { ResourceValidationPolicy } from "@pulumi/policy";
import {
  parseCorefile,
  routeName,
  sampleClusterNames,
} from "../../components/cluster-dns/corefile-routing";
import { corednsConfigsOf, corefileOf } from "./coredns-config";
import { reachesKubernetes } from "./corefile-answers";

export const corednsClusterDomainReachesKubernetes: ResourceValidationPolicy = {
  name: "coredns-cluster-domain-reaches-kubernetes",
  description:
    "Every name under the cluster domain is routed to a CoreDNS server block whose kubernetes plugin answers it.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const config of corednsConfigsOf(args.type, args.props)) {
      const corefile = corefileOf(config);
      if (corefile === undefined) continue;
      const blocks = parseCorefile(corefile);
      for (const name of sampleClusterNames(config.clusterDomain)) {
        const block = routeName(blocks, name);
        if (!block || !reachesKubernetes(corefile, name)) {
          const why = block?.plugins.includes("kubernetes")
            ? "where a template answers NXDOMAIN before the kubernetes plugin runs"
            : "which has no kubernetes plugin";
          reportViolation(
            `${name} goes to the server block "${block?.zones.join(" ") ?? "(none)"}", ${why}: ` +
              "CoreDNS routes a query to the block with the longest matching zone, so every service name would get " +
              "NXDOMAIN (the flaw in seed 000's `local` block). Give the cluster domain a block of its own.",
          );
          return;
        }
      }
    }
  },
};
