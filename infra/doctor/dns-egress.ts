/**
 * Seed 001, from a namespace's live NetworkPolicies: where pods are isolated for egress, can they
 * still ask the cluster DNS over UDP, and, with NodeLocalDNS, reach the node-local address?
 *
 * NetworkPolicy semantics (k8s.io/api@v0.35.4 networking/v1/types.go): a pod is isolated for
 * egress once any policy that relates to egress selects it, and may then send what any of those
 * policies' rules allow. A rule without `ports` allows every port and one without `to` every
 * destination; a port's protocol defaults to TCP, a port without a number matches every port, and
 * `endPort` makes a range. The node-local address is no pod's, so only an ipBlock that holds it
 * (and does not except it) lets a pod reach it.
 */
import {
  type NamespaceEgressFacts,
  relatesToEgress,
  selectorMatches,
} from "../../components/cluster-dns/egress-isolation";
import { cidrContains, parseCidr } from "../../components/model";

interface PolicyPort {
  readonly protocol?: string;
  readonly port?: number | string;
  readonly endPort?: number;
}

interface PolicyPeer {
  readonly ipBlock?: { readonly cidr: string; readonly except?: readonly string[] };
}

interface EgressRule {
  readonly ports?: readonly PolicyPort[];
  readonly to?: readonly PolicyPeer[];
}

function allowsPort(rule: EgressRule, protocol: "UDP" | "TCP"): boolean {
  if (!rule.ports || rule.ports.length === 0) return true;
  return rule.ports.some((p) => {
    if ((p.protocol ?? "TCP") !== protocol) return false;
    if (p.port === undefined || typeof p.port === "string") return true;
    return p.endPort !== undefined ? p.port <= 53 && 53 <= p.endPort : p.port === 53;
  });
}

function reaches(rule: EgressRule, ip: string): boolean {
  if (!rule.to || rule.to.length === 0) return true;
  return rule.to.some((peer) => {
    const block = peer.ipBlock && parseCidr(peer.ipBlock.cidr);
    if (!block || !cidrContains(block, ip)) return false;
    return !(peer.ipBlock?.except ?? []).some((e) => {
      const except = parseCidr(e);
      return except !== undefined && cidrContains(except, ip);
    });
  });
}

export interface DnsEgressGap {
  /** Pods, workloads (`Kind/name`) or "new pods" that the gap holds for. */
  readonly subjects: readonly string[];
  /** The egress policies that select them. */
  readonly policies: readonly string[];
  readonly gap: "no DNS" | "TCP only" | "no node-local address";
}

/**
 * What keeps a namespace's isolated pods from DNS, per kind of gap; empty when every isolated
 * pod, workload and new pod can ask over UDP (and reach `nodeLocalIp`, when given).
 */
export function dnsEgressGaps(facts: NamespaceEgressFacts, nodeLocalIp?: string): DnsEgressGap[] {
  const egressPolicies = facts.policies.filter(relatesToEgress);
  const subjects = [
    ...facts.pods
      .filter((p) => p.phase !== "Succeeded" && p.phase !== "Failed")
      .map((p) => ({ name: p.name, labels: p.labels })),
    ...facts.workloads
      .filter((w) => !w.finished)
      .map((w) => ({ name: `${w.kind}/${w.name}`, labels: w.templateLabels })),
    { name: "new pods without labels", labels: {} },
  ];
  const gaps = new Map<DnsEgressGap["gap"], { subjects: string[]; policies: Set<string> }>();
  for (const subject of subjects) {
    const selecting = egressPolicies.filter((p) => selectorMatches(p.podSelector, subject.labels));
    if (selecting.length === 0) continue;
    const rules = selecting.flatMap((p) => (p.egress ?? []) as EgressRule[]);
    const udp = rules.filter((r) => allowsPort(r, "UDP"));
    const gap: DnsEgressGap["gap"] | undefined =
      udp.length === 0
        ? rules.some((r) => allowsPort(r, "TCP"))
          ? "TCP only"
          : "no DNS"
        : nodeLocalIp !== undefined && !udp.some((r) => reaches(r, nodeLocalIp))
          ? "no node-local address"
          : undefined;
    if (!gap) continue;
    const entry = gaps.get(gap) ?? { subjects: [], policies: new Set<string>() };
    entry.subjects.push(subject.name);
    for (const p of selecting) entry.policies.add(p.name);
    gaps.set(gap, entry);
  }
  return [...gaps].map(([gap, e]) => ({
    gap,
    subjects: e.subjects,
    policies: [...e.policies].sort(),
  }));
}
