import * as YAML from "yaml";
import { ClusterSettings, DnsSettings, inZone } from "../model";
import { CorednsChartValues, CorednsPlugin, CorednsServer, DEFAULT_SERVERS } from "./chart";
import {
  corednsChartOf,
  firstReleaseHonouring,
  minorLineOf,
  releaseHonours,
} from "./chart-releases";

/**
 * Builds the rke2-coredns values that fix seed 000 without breaking in-cluster DNS:
 *
 * - Each neutralised search domain (`local`) gets its own server block that answers NXDOMAIN at
 *   once, so `ai-ear.cn.local` no longer waits on a resolver that never answers.
 * - CoreDNS sends a query to the block with the longest matching zone, so a `local` block would
 *   also take every `*.cluster.local` query. When the cluster domain lies under a neutralised
 *   domain, the cluster domain gets a block of its own with the kubernetes plugin, which is longer
 *   and therefore wins: every answer under the cluster domain stays what the default block gave.
 * - Static hosts (the Rancher hostname) are answered by the `hosts` plugin, limited to those names
 *   so everything else falls through to the default chain.
 * - With NodeLocalDNS, the node cache sends only the cluster domain and `extraClusterDomains` to
 *   CoreDNS; every zone added here is listed there, or the cache would bypass the fix.
 *
 * Returns `{}` (the chart's defaults) when the stack configures no fix.
 */
export function clusterDnsChartValues(
  dns: DnsSettings,
  cluster: ClusterSettings,
): CorednsChartValues {
  const staticNames = Object.keys(dns.staticHosts).sort();
  const neutralized = [...dns.neutralizedSearchDomains];
  if (staticNames.length === 0 && neutralized.length === 0 && !dns.nodeLocal.enabled) return {};

  const defaultBlock = DEFAULT_SERVERS[0];
  const servers: CorednsServer[] = [];
  if (neutralized.some((d) => inZone(cluster.clusterDomain, d))) {
    servers.push({
      zones: [{ zone: cluster.clusterDomain }],
      port: 53,
      plugins: [
        { name: "errors" },
        pluginOf(defaultBlock, "kubernetes"),
        pluginOf(defaultBlock, "prometheus"),
        pluginOf(defaultBlock, "cache"),
        { name: "reload" },
        { name: "loadbalance" },
      ],
    });
  }
  for (const domain of neutralized) {
    servers.push({
      zones: [{ zone: domain }],
      port: 53,
      plugins: [
        { name: "errors" },
        { name: "template", parameters: `ANY ANY ${domain}`, configBlock: "rcode NXDOMAIN" },
        pluginOf(defaultBlock, "prometheus"),
        { name: "reload" },
      ],
    });
  }
  // Forward to the stack's resolvers rather than whatever the node's resolv.conf holds, so the
  // resolvers the preflight checked (seed 004) are the ones CoreDNS uses.
  const plugins: CorednsPlugin[] = defaultBlock.plugins.map((p) =>
    p.name === "forward" && dns.upstreamResolvers.length > 0
      ? { name: "forward", parameters: `. ${dns.upstreamResolvers.join(" ")}` }
      : p,
  );
  if (staticNames.length > 0) {
    const entries = staticNames.flatMap((name) =>
      dns.staticHosts[name].map((ip) => `${ip} ${name}`),
    );
    plugins.splice(
      plugins.findIndex((p) => p.name === "kubernetes"),
      0,
      {
        name: "hosts",
        // The first argument is the hosts file; the names after it limit the plugin to those zones.
        parameters: ["/etc/hosts", ...staticNames].join(" "),
        configBlock: [...entries, "ttl 60", "reload 0"].join("\n"),
      },
    );
  }
  servers.push({ zones: defaultBlock.zones, port: defaultBlock.port, plugins });

  const values: { servers: CorednsServer[]; nodelocal?: CorednsChartValues["nodelocal"] } = {
    servers,
  };
  if (dns.nodeLocal.enabled) {
    values.nodelocal = {
      enabled: true,
      ip_address: dns.nodeLocal.ip,
      // kube-proxy in IPVS mode cannot have the cache bind the kube-dns IP; kubelet points at the cache instead.
      ipvs: cluster.kubeProxyMode === "ipvs",
      extraClusterDomains: zonesAddedByFix(dns).filter((zone) => zone !== cluster.clusterDomain),
    };
  }
  return values;
}

/** kubelet args the DNS settings imply: with NodeLocalDNS in IPVS mode, pods must ask the cache. */
export function dnsKubeletArgs(dns: DnsSettings, cluster: ClusterSettings): string[] {
  return dns.nodeLocal.enabled && cluster.kubeProxyMode === "ipvs"
    ? [`cluster-dns=${dns.nodeLocal.ip}`]
    : [];
}

/** Why a cluster's RKE2 release cannot run these DNS settings as rendered. */
export type ReleaseDnsProblem =
  | { readonly kind: "releaseNotInTable"; readonly release: string }
  | {
      readonly kind: "nodeLocalBypassesFix";
      readonly release: string;
      readonly chart: string;
      /** The fix's zones the node-local cache would send to the node's resolvers. */
      readonly zones: readonly string[];
      /** The first release on the same minor line whose chart has extraClusterDomains. */
      readonly firstFixedRelease?: string;
    };

/**
 * Checks the cluster's release against the DNS settings: the release must be in the table (its
 * chart decides what is rendered), and with NodeLocalDNS and fix zones its chart must read
 * `nodelocal.extraClusterDomains`. An older chart ignores the key without a word, so the node-local
 * cache's `.:53` block forwards the fix's zones to the node's resolvers (seed 000 again).
 */
export function releaseDnsProblem(
  dns: DnsSettings,
  cluster: ClusterSettings,
): ReleaseDnsProblem | undefined {
  const chart = corednsChartOf(cluster.version);
  if (chart === undefined) return { kind: "releaseNotInTable", release: cluster.version };
  const zones = zonesAddedByFix(dns).filter((zone) => zone !== cluster.clusterDomain);
  const key = "nodelocal.extraClusterDomains";
  if (!dns.nodeLocal.enabled || zones.length === 0 || releaseHonours(cluster.version, key)) {
    return undefined;
  }
  const line = minorLineOf(cluster.version);
  return {
    kind: "nodeLocalBypassesFix",
    release: cluster.version,
    chart,
    zones,
    firstFixedRelease: line === undefined ? undefined : firstReleaseHonouring(line, key),
  };
}

/** The zones whose answers the fix changes; each must reach CoreDNS. */
export function zonesAddedByFix(dns: DnsSettings): string[] {
  return [...dns.neutralizedSearchDomains, ...Object.keys(dns.staticHosts).sort()];
}

function pluginOf(server: CorednsServer, name: string): CorednsPlugin {
  const plugin = server.plugins.find((p) => p.name === name);
  if (!plugin) throw new Error(`the chart's default server block has no ${name} plugin`);
  return plugin;
}

/** The values as the YAML text a HelmChartConfig's valuesContent or Rancher's chartValues carry. */
export function renderChartValuesYaml(
  values: CorednsChartValues | Readonly<Record<string, unknown>>,
): string {
  return YAML.stringify(values, { aliasDuplicateObjects: false });
}
