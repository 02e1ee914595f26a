import { StackValidationPolicy } from "@pulumi/policy";
import { configList } from "./config-lists";
import {
  DNS_EGRESS_POLICY_NAME,
  systemNamespaceOwner,
} from "../../components/cluster-dns/egress-isolation";
import { DNS_EGRESS_CHECK, DNS_EGRESS_SSH_CHECK } from "../../components/model";
import { networkPoliciesOf } from "./coredns-config";
import { dependsOn } from "./dependencies";

const CHECK_TYPES = [DNS_EGRESS_CHECK.token, DNS_EGRESS_SSH_CHECK.token];

/** What the DNS policy does to a namespace whose egress nothing restricts yet. */
const WHY =
  "a NetworkPolicy that selects a pod denies all egress no policy allows, so in a namespace whose egress " +
  "nothing restricts yet allow-dns-egress cuts every pod off from everything but DNS (seed 001's policy is " +
  "an allowance for namespaces that already restrict egress)";

export const dnsEgressPolicyIsAnAllowance: StackValidationPolicy = {
  name: "dns-egress-policy-is-an-allowance",
  description:
    "A DNS egress NetworkPolicy is delivered only behind the live check of its namespace's own egress policies, and never isolates Rancher's or RKE2's own namespaces.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      protectedNamespaces: configList(
        "Namespaces of the estate's own (monitoring, ingress, ...) that no stack may opt in to isolation either, besides Rancher's and RKE2's.",
      ),
    },
  },
  validateStack: (args, reportViolation) => {
    // Its schema's default (none) applies when no config file sets it.
    const { protectedNamespaces } = args.getConfig<{ protectedNamespaces: string[] }>();
    const checks = args.resources.filter((r) => CHECK_TYPES.includes(r.type));
    for (const check of checks) {
      const namespaces = (check.props.namespaces ?? []) as { name?: string; isolate?: boolean }[];
      for (const ns of namespaces) {
        if (ns.isolate !== true) continue;
        const name = String(ns.name);
        const owner = systemNamespaceOwner(name);
        if (owner) {
          reportViolation(
            `${check.name} opts ${name}, ${owner}'s own namespace, in to isolation: it would become ` +
              "default-deny egress except DNS, and Rancher would lose its API and the cluster agents Rancher " +
              "(seed 000's symptom), CoreDNS its upstreams. Remove isolate from that dns.policyNamespaces entry.",
            check.urn,
          );
        } else if (protectedNamespaces.includes(name)) {
          reportViolation(
            `${check.name} opts ${name} in to isolation, which the policy pack's config protects ` +
              "(protectedNamespaces): it would become default-deny egress except DNS. Remove isolate from that " +
              "dns.policyNamespaces entry, or take the namespace out of protectedNamespaces.",
            check.urn,
          );
        }
      }
    }
    for (const r of args.resources) {
      const ours = networkPoliciesOf(r.type, r.props).filter((doc) => {
        const meta = (doc.metadata ?? {}) as { name?: unknown };
        return meta.name === DNS_EGRESS_POLICY_NAME;
      });
      if (ours.length === 0) continue;
      const namespaces = ours.map((doc) =>
        String(((doc.metadata ?? {}) as { namespace?: unknown }).namespace ?? "default"),
      );
      const guarded = new Set(
        checks
          .filter((c) => dependsOn(r, c))
          .flatMap((c) => (c.props.namespaces ?? []) as { name?: string }[])
          .map((n) => String(n.name)),
      );
      const unchecked = namespaces.filter((ns) => !guarded.has(ns));
      if (unchecked.length > 0) {
        reportViolation(
          `${r.name} delivers ${DNS_EGRESS_POLICY_NAME} to ${unchecked.join(", ")} without depending on a DNS ` +
            `egress check of ${unchecked.length > 1 ? "those namespaces" : "that namespace"}: ${WHY}.`,
          r.urn,
        );
      }
    }
  },
};
