import { ResourceValidationPolicy } from "@pulumi/policy";
import { networkPoliciesOf } from "./coredns-config";

interface PolicyPort {
  protocol?: string;
  port?: number | string;
}

export const networkPolicyDnsUdpAndTcp: ResourceValidationPolicy = {
  name: "networkpolicy-dns-udp-and-tcp",
  description: "A NetworkPolicy rule that allows port 53 allows it over both UDP and TCP.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const policy of networkPoliciesOf(args.type, args.props)) {
      const spec = (policy.spec ?? {}) as {
        egress?: { ports?: PolicyPort[] }[];
        ingress?: { ports?: PolicyPort[] }[];
      };
      for (const rule of [...(spec.egress ?? []), ...(spec.ingress ?? [])]) {
        const dns = (rule.ports ?? []).filter((p) => String(p.port) === "53" || p.port === "dns");
        if (dns.length === 0) continue;
        // NetworkPolicyPort.protocol defaults to TCP when omitted.
        const protocols = new Set(dns.map((p) => (p.protocol ?? "TCP").toUpperCase()));
        const missing = ["UDP", "TCP"].filter((p) => !protocols.has(p));
        if (missing.length > 0) {
          const name = String(((policy.metadata ?? {}) as { name?: string }).name ?? args.name);
          reportViolation(
            `NetworkPolicy ${name} allows port 53 without ${missing.join(" and ")} (a port without protocol means TCP): ` +
              "DNS runs over UDP and falls back to TCP for large answers, so lookups fail intermittently (seed 001).",
          );
        }
      }
    }
  },
};
