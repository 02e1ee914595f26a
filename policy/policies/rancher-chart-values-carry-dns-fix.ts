import { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { sampleClusterNames } from "../../components/cluster-dns/corefile-routing";
import { CorednsConfig, corednsConfigsOf, corefileOf, rancherChartValues } from "./coredns-config";
import { answersNxdomainLocally, reachesKubernetes } from "./corefile-answers";
import {
  LIBVIRT_DNS_RECORDS,
  RANCHER_CLUSTER_TYPE,
  RANCHER_NODE_REGISTRATION,
  inZone,
} from "../../components/model";
import { objectProp } from "./props";

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];

/** The search domain a node's name implies: sza122031.local -> local. */
const domainOf = (node: string) => node.toLowerCase().split(".").slice(1).join(".");

/**
 * What keeps the cluster's rke2-coredns chartValues from being the seed-000 fix for these search
 * domains, or undefined when they are: `<rancher>.<domain>` answered NXDOMAIN by CoreDNS itself,
 * and every name under the cluster domain still answered by the kubernetes plugin.
 */
function missingFix(
  cluster: PolicyResource,
  domains: readonly string[],
  rancherHost: string,
): string | undefined {
  if (rancherChartValues(objectProp(cluster.props, "rkeConfig") ?? {}) === undefined) {
    return "its rkeConfig.chartValues are not a YAML mapping";
  }
  let configs: CorednsConfig[];
  try {
    configs = corednsConfigsOf(RANCHER_CLUSTER_TYPE, cluster.props);
  } catch {
    return "its rkeConfig.machineGlobalConfig is not valid YAML";
  }
  if (configs.length === 0) return "its rkeConfig.chartValues carry no rke2-coredns values";
  const corefile = corefileOf(configs[0]);
  if (corefile === undefined)
    return "its rke2-coredns values do not render into a CoreDNS ConfigMap";
  const slow = domains
    .map((d) => `${rancherHost}.${d}`)
    .find((n) => !answersNxdomainLocally(corefile, n));
  if (slow) return `its CoreDNS does not answer ${slow} with NXDOMAIN itself`;
  const captured = sampleClusterNames(configs[0].clusterDomain).find(
    (n) => !reachesKubernetes(corefile, n),
  );
  if (captured) {
    return `its CoreDNS no longer answers ${captured} from the kubernetes plugin (the fix captures the cluster domain)`;
  }
  return undefined;
}

export const rancherChartValuesCarryDnsFix: StackValidationPolicy = {
  name: "rancher-chart-values-carry-dns-fix",
  description:
    "A Rancher cluster whose nodes carry a search domain the stack neutralises has rke2-coredns chartValues that answer that domain with NXDOMAIN at once and leave the cluster domain to the kubernetes plugin.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const libvirt = args.resources.filter((r) => r.type === LIBVIRT_DNS_RECORDS.token);
    const neutralized = libvirt.flatMap((r) => strings(r.props.neutralizedSearchDomains));
    if (neutralized.length === 0) return;
    const registrations = args.resources.filter((r) => r.type === RANCHER_NODE_REGISTRATION.token);
    const rancherHost =
      [
        ...libvirt.map((r) => r.props.rancherHostname),
        ...registrations.map((r) => r.props.rancherHost),
      ].find((h): h is string => typeof h === "string") ?? "rancher";
    for (const cluster of args.resources.filter((r) => r.type === RANCHER_CLUSTER_TYPE)) {
      const name = String(cluster.props.name ?? cluster.name);
      const nodes = registrations
        .filter((r) => r.props.cluster === name)
        .map((r) => String(r.props.node ?? ""));
      const domains = [...new Set(nodes.map(domainOf))].filter(
        (d) => d && neutralized.some((n) => inZone(d, n)),
      );
      if (domains.length === 0) continue;
      const problem = missingFix(cluster, domains, rancherHost);
      if (problem) {
        reportViolation(
          `cluster ${name}: its nodes (${nodes.join(", ")}) search ${domains.join(", ")}, which the stack neutralises, ` +
            `but ${problem}. rkeConfig.chartValues must carry rke2-coredns values that answer ${domains.join(", ")} ` +
            "with NXDOMAIN at once without capturing the cluster domain: pods inherit the search domain with ndots:5, " +
            `the upstream drops those queries, so the cluster agent's lookup of ${rancherHost} times out on ` +
            `${rancherHost}.${domains[0]} and the cluster never becomes Ready (seed 000).`,
          cluster.urn,
        );
      }
    }
  },
};
