import { ResourceValidationPolicy } from "@pulumi/policy";
import {
  CorednsChartValues,
  renderChartNodeLocalCorefile,
} from "../../components/cluster-dns/chart";
import {
  corednsChartOf,
  firstReleaseHonouring,
  minorLineOf,
  RELEASE_TABLE_MODULE,
} from "../../components/cluster-dns/chart-releases";
import {
  parseCorefile,
  routeName,
  ServerBlock,
} from "../../components/cluster-dns/corefile-routing";
import { chartReadsKey } from "../../components/cluster-dns/known-values";
import { ANNOTATIONS } from "../../components/cluster-dns/manifests";
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

/** A node-local block that sends its queries to the node's resolvers rather than to CoreDNS. */
function forwardsToNodeUpstream(block: ServerBlock | undefined): boolean {
  return (
    block === undefined ||
    block.body.some(
      (line) => /^forward\s/.test(line) && line.includes("__PILLAR__UPSTREAM__SERVERS__"),
    )
  );
}

const EXTRA_DOMAINS_KEY = "nodelocal.extraClusterDomains";

export const nodeLocalCarriesFixZones: ResourceValidationPolicy = {
  name: "nodelocal-carries-fix-zones",
  description:
    "With NodeLocalDNS on, the node-local Corefile that the cluster's own rke2-coredns chart renders sends every zone the CoreDNS fix answers to CoreDNS, not to the node's upstream resolvers.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const config of corednsConfigsOf(args.type, args.props)) {
      const nodelocal = config.values.nodelocal;
      if (!nodelocal?.enabled) continue;
      const zones = fixZones(config.values, config.clusterDomain);
      if (zones.length === 0) continue;
      const release = config.rke2Version;
      const chart = release === undefined ? undefined : corednsChartOf(release);
      if (release === undefined || chart === undefined) {
        reportViolation(
          (release === undefined
            ? `the configuration does not state its RKE2 release (annotation ${ANNOTATIONS.rke2Version})`
            : `RKE2 ${release} is not in the release table (${RELEASE_TABLE_MODULE})`) +
            ", so the rke2-coredns chart that renders the node-local Corefile is unknown; a chart before 1.46.003 " +
            `ignores ${EXTRA_DOMAINS_KEY} and sends ${zones.join(", ")} past the fix (seed 000).`,
        );
        continue;
      }
      // Judge the Corefile the node runs: the one this release's chart renders from the values.
      const corefile = renderChartNodeLocalCorefile(
        nodelocal,
        { clusterDnsIp: config.clusterDnsIp ?? "", clusterDomain: config.clusterDomain },
        chart,
      );
      const blocks = parseCorefile(corefile);
      const bypassed = zones.filter((zone) => forwardsToNodeUpstream(routeName(blocks, zone)));
      if (bypassed.length === 0) continue;
      if (!chartReadsKey(chart, EXTRA_DOMAINS_KEY)) {
        const line = minorLineOf(release);
        const fixed =
          line === undefined ? undefined : firstReleaseHonouring(line, EXTRA_DOMAINS_KEY);
        reportViolation(
          `the node-local Corefile that rke2-coredns ${chart} (RKE2 ${release}) renders sends ${bypassed.join(", ")} ` +
            `to the node's upstream resolvers: that chart has no ${EXTRA_DOMAINS_KEY}, so the node-local cache ` +
            "bypasses the CoreDNS fix and `*.local` lookups time out again (seed 000). " +
            (fixed
              ? `Use RKE2 ${fixed} or later.`
              : `No ${line} release has the key; move to one that does.`),
        );
      } else {
        reportViolation(
          `${EXTRA_DOMAINS_KEY} lacks ${bypassed.join(", ")}: the node-local cache forwards those names to the ` +
            "node's upstream instead of CoreDNS, bypassing the fix, and `*.local` lookups time out again (seed 000).",
        );
      }
    }
  },
};
