import { ResourceValidationPolicy } from "@pulumi/policy";
import { CorednsChartValues } from "../../components/cluster-dns/chart";
import { corednsConfigsOf } from "./coredns-config";

/** Zones whose answers the CoreDNS config changes: extra server blocks and hosts-plugin zones. */
export function fixZones(values: CorednsChartValues, clusterDomain: string): string[] {
  const zones = new Set<string>();
  for (const server of values.servers ?? []) {
    for (const { zone } of server.zones) {
      const z = zone.replace(/\.$/, "");
      if (z && z !== "." && z !== clusterDomain) zones.add(z);
    }
    for (const plugin of server.plugins.filter((p) => p.name === "hosts")) {
      const params = (plugin.parameters ?? "").split(/\s+/).filter(Boolean);
      const names = params[0]?.startsWith("/") ? params.slice(1) : params;
      names.forEach((n) => zones.add(n.replace(/\.$/, "")));
    }
  }
  return [...zones].sort();
}

export const nodeLocalCarriesFixZones: ResourceValidationPolicy = {
  name: "nodelocal-carries-fix-zones",
  description:
    "With NodeLocalDNS on, every zone the CoreDNS fix answers is in nodelocal.extraClusterDomains.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const config of corednsConfigsOf(args.type, args.props)) {
      const nodelocal = config.values.nodelocal;
      if (!nodelocal?.enabled) continue;
      const extra = new Set(nodelocal.extraClusterDomains ?? []);
      const missing = fixZones(config.values, config.clusterDomain).filter((z) => !extra.has(z));
      if (missing.length > 0) {
        reportViolation(
          `nodelocal.extraClusterDomains lacks ${missing.join(", ")}: the node-local cache forwards those names to the ` +
            "node's upstream instead of CoreDNS, bypassing the fix, and `*.local` lookups time out again (seed 000).",
        );
      }
    }
  },
};
