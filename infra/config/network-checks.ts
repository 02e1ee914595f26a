/**
 * The networks of the estate against each other: libvirt's subnet, the clusters' CIDRs and
 * their sizes, special address blocks, NodePort ranges and registry ports against RKE2's own.
 */
import { clusterPortRules } from "../../components/rke2-cluster/settings";
import {
  ClusterSettings,
  LibvirtSettings,
  MANAGEMENT_CLUSTER,
  NodeSpec,
  Cidr,
  cidrContains,
  cidrSize,
  cidrsOverlap,
  ipToNumber,
  isIpv4,
  parseCidr,
} from "../../components/model";
import { ConfigReader } from "./reader";
import { EstateFacts, clusterPath, isHostname } from "./values";

export function checkNetworks(
  r: ConfigReader,
  libvirt: LibvirtSettings | undefined,
  clusters: ClusterSettings[],
): void {
  const nodeNet = libvirt ? parseCidr(libvirt.subnet) : undefined;
  clusters.forEach((c, i) => {
    const path = c.name === MANAGEMENT_CLUSTER ? "rke2" : `rancher.downstreamClusters[${i - 1}]`;
    const nets: [string, Cidr | undefined][] = [
      [`${path}.clusterCidr`, parseCidr(c.clusterCidr)],
      [`${path}.serviceCidr`, parseCidr(c.serviceCidr)],
      ["libvirt.subnet", nodeNet],
    ];
    for (let a = 0; a < nets.length; a++) {
      for (let b = a + 1; b < nets.length; b++) {
        const [keyA, netA] = nets[a];
        const [keyB, netB] = nets[b];
        if (netA && netB && cidrsOverlap(netA, netB)) {
          r.problem(
            keyA,
            `${netA.text} overlaps ${netB.text} (${r.key(keyB)}); pod, service and node networks must be disjoint or traffic is routed to the wrong place.`,
          );
        }
      }
    }
  });
}

/**
 * IPv4 blocks no node, pod or service address may be in: RFC 6890's "this network", loopback and
 * reserved blocks, RFC 5771's multicast block, and the link-local block, which is reachable only
 * on its own link (RFC 3927) and holds the NodeLocalDNS address.
 */
const NOT_UNICAST: readonly { readonly cidr: Cidr; readonly what: string }[] = [
  { text: "0.0.0.0/8", what: 'the "this network" block (0.0.0.0 is the unspecified address)' },
  { text: "127.0.0.0/8", what: "the loopback block" },
  { text: "169.254.0.0/16", what: "the link-local block" },
  { text: "224.0.0.0/4", what: "the multicast block" },
  { text: "240.0.0.0/4", what: "the reserved block (255.255.255.255 is the broadcast address)" },
].map((b) => ({ cidr: parseCidr(b.text)!, what: b.what }));

/** Private blocks (RFC 1918). */
export const PRIVATE_BLOCKS: readonly Cidr[] = [
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
].map((t) => parseCidr(t)!);
export const LINK_LOCAL = parseCidr("169.254.0.0/16")!;

export function specialBlockOf(ip: string): string | undefined {
  return NOT_UNICAST.find((b) => cidrContains(b.cidr, ip))?.what;
}

/**
 * Why `ip` cannot be a host on the node network (nodes, a registration VIP), or undefined.
 * `gateway` and the KVM host's own address belong to the KVM host.
 */
export function addressNoNodeCanHave(
  ip: string,
  facts: EstateFacts,
  gateway: string | undefined,
): string | undefined {
  const special = specialBlockOf(ip);
  if (special) return `${ip} is in ${special}, where no node of the estate can be reached`;
  const subnet = facts.libvirt ? parseCidr(facts.libvirt.subnet) : undefined;
  if (subnet && cidrContains(subnet, ip) && subnet.prefix <= 30) {
    if (ipToNumber(ip) === subnet.base) {
      return `${ip} is the network address of libvirt.subnet ${subnet.text}, which no host can have`;
    }
    if (ipToNumber(ip) === subnet.base + cidrSize(subnet) - 1) {
      return `${ip} is the broadcast address of libvirt.subnet ${subnet.text}, which no host can have`;
    }
  }
  if (ip === gateway) {
    return `${ip} is the libvirt network's gateway, the KVM host's own address on it (libvirt.gateway)`;
  }
  if (ip === facts.libvirt?.ssh?.host) {
    return `${ip} is the KVM host's own address (libvirt.ssh.host)`;
  }
  for (const [i, c] of facts.clusters.entries()) {
    const path = clusterPath(c, i);
    const nets: [string, string][] = [
      [`${path}.clusterCidr`, c.clusterCidr],
      [`${path}.serviceCidr`, c.serviceCidr],
    ];
    for (const [key, text] of nets) {
      const net = parseCidr(text);
      if (net && cidrContains(net, ip)) {
        return `${ip} lies inside ${key} ${text}, which the cluster routes to pods or services, not to nodes`;
      }
    }
  }
  return undefined;
}

/**
 * The service CIDR holds kube-dns at its 10th address, which RKE2 renders as kubelet's
 * cluster-dns: in a /29 or smaller that address lies outside the range. The apiserver never
 * allocates an IPv4 range's network or broadcast address
 * (kubernetes/kubernetes@v1.35.4:pkg/registry/core/service/ipallocator/bitmap.go, New), so
 * .10 needs at least a /28. It refuses a range larger than /12
 * (kubernetes/kubernetes@v1.35.4:cmd/kube-apiserver/app/options/validation.go,
 * validateMaxCIDRRange with maxCIDRBits 20).
 */
export function checkClusterNetworkSizes(
  r: ConfigReader,
  clusters: readonly ClusterSettings[],
): void {
  clusters.forEach((c, i) => {
    const net = parseCidr(c.serviceCidr);
    if (!net) return;
    const key = `${clusterPath(c, i)}.serviceCidr`;
    if (net.prefix > 28) {
      r.problem(
        key,
        `${net.text} holds ${cidrSize(net)} addresses, too few for kube-dns at its 10th address: ` +
          `cluster-dns would be ${c.clusterDnsIp}, outside the range, and no pod could resolve a name. ` +
          "Use a /28 or larger service network, e.g. 10.43.0.0/16.",
      );
    } else if (net.prefix < 12) {
      r.problem(
        key,
        `${net.text} is larger than kube-apiserver accepts (at most a /12 for IPv4); it would not ` +
          "start. Use a /12 or smaller service network, e.g. 10.43.0.0/16.",
      );
    }
  });
}

/** Pod and service networks in blocks that are never routed as unicast (see NOT_UNICAST). */
export function checkReservedClusterNetworks(
  r: ConfigReader,
  clusters: readonly ClusterSettings[],
): void {
  clusters.forEach((c, i) => {
    const path = clusterPath(c, i);
    for (const [key, text] of [
      [`${path}.clusterCidr`, c.clusterCidr],
      [`${path}.serviceCidr`, c.serviceCidr],
    ] as const) {
      const net = parseCidr(text);
      const block = net && NOT_UNICAST.find((b) => cidrsOverlap(b.cidr, net));
      if (net && block) {
        r.problem(
          key,
          `${net.text} overlaps ${block.cidr.text}, ${block.what}; pod and service addresses there ` +
            "are not routed (and 169.254.0.0/16 holds the NodeLocalDNS address). Use a private " +
            "network such as 10.42.0.0/16 (pods) or 10.43.0.0/16 (services).",
        );
      }
    }
  });
}

// A NodePort in the range is forwarded by kube-proxy on every node, so a service the apiserver
// happens to give one of RKE2's or the CNI's ports (../../components/rke2-cluster/settings.ts)
// takes that port's traffic away from RKE2.
export function checkNodePortRanges(
  r: ConfigReader,
  clusters: readonly ClusterSettings[],
  nodes: readonly NodeSpec[],
): void {
  clusters.forEach((c, i) => {
    const m = /^(\d{1,5})-(\d{1,5})$/.exec(c.nodePortRange);
    if (!m) return; // reported where it is read
    const [low, high] = [Number(m[1]), Number(m[2])];
    const key = `${clusterPath(c, i)}.nodePortRange`;
    if (low < 1) {
      r.problem(
        key,
        `"${c.nodePortRange}" starts at port 0, which is no port; start at 1 or above, e.g. 30000-32767.`,
      );
      return;
    }
    const sshPorts = [...new Set(nodes.filter((n) => n.cluster === c.name).map((n) => n.ssh.port))];
    const covered = [
      ...clusterPortRules(c.cni),
      ...sshPorts.map((port) => ({ port, what: "SSH to the nodes" })),
    ].filter((p) => p.port >= low && p.port <= high);
    if (covered.length > 0) {
      r.problem(
        key,
        `${c.nodePortRange} covers ${covered.map((p) => `${p.port} (${p.what})`).join(", ")}; ` +
          "kube-proxy forwards every NodePort on every node, so a service given one of these " +
          "ports takes its traffic from the node. Use a range clear of them, e.g. 30000-32767.",
      );
    }
  });
}

export function checkPrivateRegistryPorts(
  r: ConfigReader,
  clusters: readonly ClusterSettings[],
): void {
  clusters.forEach((c, i) => {
    if (c.privateRegistry === undefined) return;
    const m = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(c.privateRegistry);
    if (!m) return; // reported where it is read
    const key = `${clusterPath(c, i)}.privateRegistry`;
    const [, host, port] = m;
    if (!isIpv4(host) && (!isHostname(host) || /(^|\.)\d+$/.test(host))) {
      r.problem(
        key,
        `"${host}" is neither an IPv4 address nor a DNS name; write the registry as host[:port], e.g. 192.168.122.156:30000.`,
      );
    }
    if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) {
      r.problem(
        key,
        `port ${port} is outside 1-65535; write the port the registry listens on, e.g. 192.168.122.156:30000.`,
      );
    }
  });
}
