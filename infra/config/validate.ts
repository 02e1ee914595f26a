/**
 * The stack config validator: the order of its steps. Each section of the stack file has its
 * own module, its reader beside the checks on it (./ssh-section.ts, ./libvirt-section.ts,
 * ./cluster-section.ts, ./pass-through.ts, ./rancher-section.ts, ./node-section.ts,
 * ./dns-section.ts); checks across sections have theirs (./network-checks.ts,
 * ./secret-checks.ts, ./known-keys.ts, ./estate-mistakes.ts), and so do the warnings
 * (./warnings.ts). A new check goes into the module of the section it reads, or of the
 * concern it checks across sections, and is called from here or from ./estate-mistakes.ts.
 */
import { ClusterSettings, EnvironmentModel, MANAGEMENT_CLUSTER } from "../../components/model";
import { ConfigProblem, ConfigValidationError } from "./problems";
import { keyIsRead } from "./deploy-parts";
import { ConfigReader } from "./reader";
import {
  MANAGEMENT_STACK_KEY,
  readManagementStack,
  withManagementOutputs,
} from "./management-stack";
import { checkProfiles, checkRegistrationAddress, readClusterSettings } from "./cluster-section";
import {
  checkDnsAgainstNetworks,
  checkDnsAgainstReleases,
  checkNeutralizedDomainsSpareRancher,
  readDns,
} from "./dns-section";
import { checkEstateMistakes } from "./estate-mistakes";
import { checkKnownKeys, checkNamespaces } from "./known-keys";
import { readLibvirt } from "./libvirt-section";
import { checkNetworks } from "./network-checks";
import { checkServers, readDeploy, readNodePreparation, readNodes } from "./node-section";
import { checkDownstreamMembership, checkRancherStaticHosts, readRancher } from "./rancher-section";
import { CONFIG_NAMESPACE, RawStackConfig, ValidationOptions } from "./raw-config";
import { checkSecrets } from "./secret-checks";

export { CONFIG_NAMESPACE, type RawStackConfig, type ValidationOptions } from "./raw-config";
export { isHostname } from "./values";
export { configWarnings } from "./warnings";

/** Validates the whole stack config, returning the model or every problem found. */
export function validateEnvironment(
  stack: string,
  raw: RawStackConfig,
  options: ValidationOptions,
): { model?: EnvironmentModel; problems: ConfigProblem[] } {
  const r = new ConfigReader(CONFIG_NAMESPACE);
  checkNamespaces(r, raw);
  checkKnownKeys(r, raw);
  // A downstream stack's Rancher values come from the stack that owns Rancher.
  const managementStack = readManagementStack(r, raw.values[MANAGEMENT_STACK_KEY]);
  if (managementStack !== undefined && options.managementOutputs === undefined) {
    r.problem(
      MANAGEMENT_STACK_KEY,
      `names the stack "${managementStack}", whose outputs are not at hand: render and verify ` +
        "run offline, so pass them with --management-outputs <file>, written by " +
        `\`pulumi stack output --stack ${managementStack} --json > <file>\`.`,
    );
  }
  if (options.managementOutputs !== undefined && raw.values[MANAGEMENT_STACK_KEY] === undefined) {
    r.problem(
      MANAGEMENT_STACK_KEY,
      "is not set, yet a management stack's outputs were given (--management-outputs); set it " +
        "to that stack's name, or leave the outputs out.",
    );
  }
  const merged: RawStackConfig =
    managementStack !== undefined && options.managementOutputs !== undefined
      ? {
          ...raw,
          values: withManagementOutputs(r, raw.values, managementStack, options.managementOutputs),
        }
      : raw;
  const v = merged.values;

  // What the stack deploys decides which keys it must give (deploy-parts.ts).
  const deploy = readDeploy(r, v.deploy);
  const reads = (key: string) => keyIsRead(deploy, key);
  const libvirt = readLibvirt(r, v.libvirt, reads("libvirt.ssh"));
  // A stack of downstream clusters only (no node in the management cluster) needs no `rke2`.
  const listsManagementNodes =
    !Array.isArray(v.nodes) ||
    v.nodes.some((n: unknown) => {
      const cluster = (n as { cluster?: unknown } | null)?.cluster;
      return cluster === undefined || cluster === MANAGEMENT_CLUSTER;
    });
  const management = readClusterSettings(
    r,
    v.rke2,
    "rke2",
    MANAGEMENT_CLUSTER,
    listsManagementNodes && reads("rke2.version"),
  );
  // Without the management stack's outputs, its URL is not at hand: that is reported above, and
  // the clusters this stack declares are still read.
  const outputsNotAtHand = managementStack !== undefined && options.managementOutputs === undefined;
  const rancher = readRancher(r, v.rancher, deploy, outputsNotAtHand);
  const clusters: ClusterSettings[] = [management, ...(rancher?.downstreamClusters ?? [])];
  const nodes = readNodes(r, v.nodes, clusters, deploy);
  const dns = readDns(r, v.dns, reads("dns.upstreamResolvers"));
  const nodePreparation = readNodePreparation(r, v.nodePreparation);

  checkNetworks(r, libvirt, clusters);
  checkServers(r, nodes, Array.isArray(v.nodes) && nodes.length === v.nodes.length, deploy);
  checkRegistrationAddress(r, management, nodes);
  checkProfiles(r, clusters, nodes);
  // Rancher registers the nodes: only then must each cluster have every role and a CA to pin.
  if (deploy.rancherClusters) checkDownstreamMembership(r, nodes, rancher, outputsNotAtHand);
  checkDnsAgainstNetworks(r, dns, libvirt, clusters, nodes);
  checkDnsAgainstReleases(r, dns, clusters);
  const rancherAnswer = checkRancherStaticHosts(
    r,
    dns,
    libvirt,
    rancher,
    nodes,
    Array.isArray(v.nodes) && nodes.length === v.nodes.length,
  );
  checkSecrets(r, merged, options, { deploy, nodes, rancher, management });
  checkEstateMistakes(r, { raw: merged, libvirt, clusters, nodes, dns, rancher });
  checkNeutralizedDomainsSpareRancher(r, dns, rancher);

  if (r.problems.length > 0 || !libvirt) return { problems: r.problems };
  const dnsWithRancher = rancherAnswer
    ? { ...dns, staticHosts: { ...dns.staticHosts, ...rancherAnswer } }
    : dns;
  return {
    model: {
      stack,
      ...(managementStack !== undefined ? { managementStack } : {}),
      deploy,
      libvirt,
      nodes,
      management,
      rancher,
      dns: dnsWithRancher,
      nodePreparation,
    },
    problems: [],
  };
}

/** Like validateEnvironment, but throws one error naming every problem. */
export function loadEnvironmentModel(
  stack: string,
  raw: RawStackConfig,
  options: ValidationOptions,
): EnvironmentModel {
  const { model, problems } = validateEnvironment(stack, raw, options);
  if (!model) throw new ConfigValidationError(stack, problems);
  return model;
}
