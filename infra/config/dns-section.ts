/**
 * `dns`: the readers of the resolvers and the policy namespaces, and the checks of the DNS
 * settings against the networks, the RKE2 releases and Rancher.
 */
import {
  ClusterSettings,
  DnsPolicyNamespace,
  DnsSettings,
  LibvirtSettings,
  MANAGEMENT_CLUSTER,
  NodeSpec,
  RancherSettings,
  Cidr,
  cidrContains,
  parseCidr,
  inZone,
} from "../../components/model";
import { ConfigReader } from "./reader";
import { DNS_KEYS, NODE_LOCAL_KEYS, POLICY_NAMESPACE_KEYS, readSettings } from "./stack-keys";
import {
  knownMinorLines,
  minorLineOf,
  newestReleaseOn,
  RELEASE_TABLE_MODULE,
} from "../../components/cluster-dns/chart-releases";
import { releaseDnsProblem } from "../../components/cluster-dns/values";
import { systemNamespaceOwner } from "../../components/cluster-dns/egress-isolation";
import { RKE2_VERSION } from "./cluster-section";
import { LINK_LOCAL, PRIVATE_BLOCKS, specialBlockOf } from "./network-checks";
import { K8S_NAME, hostnameOf, ipOf, isHostname, readIp } from "./values";

/** `dns`; the upstream resolvers are required where a cluster DNS is rendered. */
export function readDns(r: ConfigReader, value: unknown, upstreamsRequired: boolean): DnsSettings {
  const o = r.object(value, "dns") ?? {};
  const staticHosts: Record<string, string[]> = {};
  for (const [name, ips] of Object.entries(r.object(o.staticHosts, "dns.staticHosts") ?? {})) {
    const path = `dns.staticHosts["${name}"]`;
    if (!isHostname(name)) {
      r.problem(path, `"${name}" is not a valid DNS name; fix the hostname.`);
      continue;
    }
    staticHosts[name.toLowerCase()] = (r.array(ips, path) ?? [])
      .map((ip, i) => readIp(r, ip, `${path}[${i}]`))
      .filter((ip): ip is string => ip !== undefined);
  }
  const v = readSettings(r, DNS_KEYS, o, "dns");
  const neutralizedSearchDomains = (v.neutralizedSearchDomains ?? [])
    .map((d, i) => hostnameOf(r, d, `dns.neutralizedSearchDomains[${i}]`))
    .filter((d): d is string => d !== undefined);
  const nl = readSettings(
    r,
    NODE_LOCAL_KEYS,
    r.object(o.nodeLocal, "dns.nodeLocal") ?? {},
    "dns.nodeLocal",
  );
  const nodeLocal = {
    enabled: nl.enabled,
    ip: ipOf(r, nl.ip, "dns.nodeLocal.ip") ?? NODE_LOCAL_KEYS.ip.fallback,
  };
  const upstreamList = r.array(o.upstreamResolvers, "dns.upstreamResolvers");
  if (upstreamsRequired && (!upstreamList || upstreamList.length === 0)) {
    r.problem(
      "dns.upstreamResolvers",
      "lists no resolver; give the addresses the cluster DNS forwards to (at least two).",
    );
  }
  const upstreamResolvers = (upstreamList ?? [])
    .map((ip, i) => readIp(r, ip, `dns.upstreamResolvers[${i}]`))
    .filter((ip): ip is string => ip !== undefined);
  const policyNamespaces = readPolicyNamespaces(r, o.policyNamespaces);
  return { staticHosts, neutralizedSearchDomains, nodeLocal, upstreamResolvers, policyNamespaces };
}

/**
 * `dns.policyNamespaces`: a name (the DNS egress policy as an allowance, checked at `up` against
 * the namespace's own egress policies) or `{ name, isolate }`. `isolate: true` makes the
 * namespace default-deny egress except DNS, which Rancher's and RKE2's own namespaces can never
 * be: Rancher would lose its API and the cluster agents Rancher, CoreDNS its upstreams.
 */
function readPolicyNamespaces(r: ConfigReader, value: unknown): DnsPolicyNamespace[] {
  const entries: DnsPolicyNamespace[] = [];
  const seen = new Map<string, number>();
  (r.array(value, "dns.policyNamespaces") ?? []).forEach((item, i) => {
    const path = `dns.policyNamespaces[${i}]`;
    let name: string | undefined;
    let isolate = false;
    if (typeof item === "string") {
      name = item;
    } else if (typeof item === "object" && item !== null && !Array.isArray(item)) {
      const o = item as Record<string, unknown>;
      name = r.requiredString(o.name, `${path}.name`, "give the namespace's name.");
      isolate = POLICY_NAMESPACE_KEYS.isolate.read(r, o.isolate, `${path}.isolate`);
    } else {
      r.problem(
        path,
        'is neither a namespace name nor a map { name, isolate }; write "<namespace>" or { name: <namespace>, isolate: true }.',
      );
      return;
    }
    if (name === undefined) return;
    const namePath = typeof item === "string" ? path : `${path}.name`;
    if (!K8S_NAME.test(name)) {
      r.problem(namePath, `"${name}" is not a Kubernetes namespace name.`);
      return;
    }
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      r.problem(
        namePath,
        `"${name}" is also dns.policyNamespaces[${earlier}]; list each namespace once.`,
      );
      return;
    }
    seen.set(name, i);
    const owner = systemNamespaceOwner(name);
    if (isolate && owner) {
      r.problem(
        `${path}.isolate`,
        `${name} is ${owner}'s own namespace; isolate: true would make it default-deny egress ` +
          "except DNS and cut it off from the Kubernetes API and everything else (Rancher from " +
          "its API and the cluster agents, CoreDNS from its upstreams: seed 000's symptom). Remove " +
          "isolate; the allowance then goes in only where an egress policy of the namespace's own " +
          "already restricts its pods, which `up` checks.",
      );
      return;
    }
    entries.push({ name, isolate });
  });
  return entries;
}

export function checkDnsAgainstNetworks(
  r: ConfigReader,
  dns: DnsSettings,
  libvirt: LibvirtSettings | undefined,
  clusters: ClusterSettings[],
  nodes: NodeSpec[],
): void {
  const inUse: [string, Cidr][] = [];
  if (libvirt) inUse.push(["libvirt.subnet", parseCidr(libvirt.subnet)!]);
  for (const c of clusters) {
    const cc = parseCidr(c.clusterCidr);
    const sc = parseCidr(c.serviceCidr);
    if (cc) inUse.push([`cluster CIDR of ${c.name}`, cc]);
    if (sc) inUse.push([`service CIDR of ${c.name}`, sc]);
  }
  for (const [what, net] of inUse) {
    if (cidrContains(net, dns.nodeLocal.ip)) {
      r.problem(
        "dns.nodeLocal.ip",
        `${dns.nodeLocal.ip} lies inside ${net.text} (${what}); pick a link-local address such as 169.254.20.10.`,
      );
    }
  }
  if (nodes.some((n) => n.ip === dns.nodeLocal.ip)) {
    r.problem(
      "dns.nodeLocal.ip",
      `${dns.nodeLocal.ip} is a node address; pick a link-local address such as 169.254.20.10.`,
    );
  }
  dns.neutralizedSearchDomains.forEach((domain, i) => {
    // A domain at or under the cluster domain is a longer zone than it: CoreDNS would route
    // service names there and answer NXDOMAIN for them.
    const cluster = clusters.find((c) => inZone(domain, c.clusterDomain));
    if (cluster) {
      r.problem(
        `dns.neutralizedSearchDomains[${i}]`,
        `"${domain}" lies within the cluster domain ${cluster.clusterDomain} of ${cluster.name}; neutralising it would answer NXDOMAIN for services.`,
      );
    }
  });
  dns.upstreamResolvers.forEach((ip, i) => {
    const path = `dns.upstreamResolvers[${i}]`;
    const loopTarget = clusters.find((c) => c.clusterDnsIp === ip);
    if (loopTarget) {
      r.problem(
        path,
        `${ip} is the cluster DNS of ${loopTarget.name}; forwarding to it is a loop (seed 004). Use the nodes' real resolvers.`,
      );
    } else if (dns.nodeLocal.enabled && ip === dns.nodeLocal.ip) {
      r.problem(
        path,
        `${ip} is the NodeLocalDNS address; forwarding to it is a loop (seed 004). Use the nodes' real resolvers.`,
      );
    } else if (ip.startsWith("127.")) {
      r.problem(
        path,
        `${ip} is a loopback address; inside a pod it is the cache itself, a loop (seed 004).`,
      );
    }
  });
}

/**
 * Each cluster's RKE2 release must be in the release table, and with NodeLocalDNS and fix zones
 * its rke2-coredns chart must read `nodelocal.extraClusterDomains`: an older chart ignores the key,
 * and the node-local cache forwards the fix's zones to the node's resolvers (seed 000 again).
 */
export function checkDnsAgainstReleases(
  r: ConfigReader,
  dns: DnsSettings,
  clusters: ClusterSettings[],
): void {
  clusters.forEach((cluster, i) => {
    // A missing or malformed version is reported where it is read.
    if (!RKE2_VERSION.test(cluster.version)) return;
    const path =
      cluster.name === MANAGEMENT_CLUSTER
        ? "rke2.version"
        : `rancher.downstreamClusters[${i - 1}].version`;
    const problem = releaseDnsProblem(dns, cluster);
    const line = minorLineOf(cluster.version) ?? "";
    if (problem?.kind === "releaseNotInTable") {
      const newest = newestReleaseOn(line);
      r.problem(
        path,
        `"${cluster.version}" is not in the RKE2 release table (${RELEASE_TABLE_MODULE}), so the ` +
          "rke2-coredns chart it ships, and the cluster DNS it would run, are unknown. Add the " +
          "release to that table with the rke2-coredns version from rancher/rke2 " +
          "charts/chart_versions.yaml at its tag, or use a release the table lists (" +
          (newest ? `newest on ${line}: ${newest}` : `lines ${knownMinorLines().join(", ")}`) +
          ").",
      );
    } else if (problem?.kind === "nodeLocalBypassesFix") {
      r.problem(
        path,
        `${problem.release} ships rke2-coredns ${problem.chart}, which has no ` +
          `nodelocal.extraClusterDomains (the chart reads it from 1.46.003 on); with ` +
          `${r.key("dns.nodeLocal.enabled")} the node-local cache would send ` +
          `${problem.zones.join(", ")} to the node's resolvers instead of CoreDNS, bypassing the ` +
          "fix, and *.local lookups would time out again (seed 000). " +
          (problem.firstFixedRelease
            ? `Use ${problem.firstFixedRelease} or later on the ${line} line`
            : `No ${line} release has it; move to a line that does (${knownMinorLines().join(", ")})`) +
          ", or turn NodeLocalDNS off.",
      );
    }
  });
}

/**
 * A neutralised search domain that contains the Rancher host makes the cluster DNS answer
 * NXDOMAIN for Rancher itself: the cluster agent never reaches it (seed 000, made by the fix).
 * An error in every stack shape, with or without libvirt records.
 */
export function checkNeutralizedDomainsSpareRancher(
  r: ConfigReader,
  dns: DnsSettings,
  rancher: RancherSettings | undefined,
): void {
  const host = rancher?.hostname;
  if (host === undefined) return;
  dns.neutralizedSearchDomains.forEach((domain, i) => {
    if (!inZone(host, domain)) return;
    r.problem(
      `dns.neutralizedSearchDomains[${i}]`,
      `"${domain}" contains Rancher's host ${host} (${r.key("rancher.url")}); the cluster ` +
        `DNS would answer NXDOMAIN for it and the cluster agents would never reach Rancher (seed 000). ` +
        "Neutralise only the search domain the nodes hand to pods (their DHCP domain, `local` in the seeds).",
    );
  });
}

/**
 * `dns.nodeLocal.ip` is an address every node binds for the node-local cache: it must be one no
 * network routes, link-local (RFC 3927) or private (RFC 1918); a public address would capture
 * that host for every pod. An upstream resolver in a block that holds no unicast host cannot
 * answer; one on the link-local block is only reachable on its own link, which from a pod is
 * at best a node-local cache again (seed 004's loop). Loopback upstreams are reported with the
 * loop checks.
 */
export function checkDnsServerAddresses(r: ConfigReader, dns: DnsSettings): void {
  const nodeLocal = dns.nodeLocal.ip;
  const special = specialBlockOf(nodeLocal);
  if (special && !cidrContains(LINK_LOCAL, nodeLocal)) {
    r.problem(
      "dns.nodeLocal.ip",
      `${nodeLocal} is in ${special}; the node-local cache cannot listen there. Use a link-local address such as 169.254.20.10.`,
    );
  } else if (!special && !PRIVATE_BLOCKS.some((b) => cidrContains(b, nodeLocal))) {
    r.problem(
      "dns.nodeLocal.ip",
      `${nodeLocal} is a public address; every node would answer it itself, so pods could no longer reach the real host. Use a link-local address such as 169.254.20.10.`,
    );
  }
  const seen = new Map<string, number>();
  dns.upstreamResolvers.forEach((ip, i) => {
    const path = `dns.upstreamResolvers[${i}]`;
    if (seen.has(ip)) {
      r.problem(
        path,
        `${ip} is also dns.upstreamResolvers[${seen.get(ip)}]; a second entry for the same server is no second resolver. List each resolver once.`,
      );
    } else seen.set(ip, i);
    // Loopback and the NodeLocalDNS address are reported by the loop checks.
    if (ip.startsWith("127.") || (dns.nodeLocal.enabled && ip === nodeLocal)) return;
    const block = specialBlockOf(ip);
    if (block) {
      r.problem(
        path,
        `${ip} is in ${block}, where no resolver can answer a pod's CoreDNS; use the address of a DNS server the nodes reach, e.g. the libvirt network's dnsmasq.`,
      );
    }
  });
}
