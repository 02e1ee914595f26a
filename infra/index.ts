/**
 * The Pulumi program: load and validate the stack config once, then declare the estate. It is
 * an async function because a downstream stack first reads the management stack's outputs
 * (`managementStack`); Pulumi's Node runtime calls an exported function and takes the object it
 * resolves to as the stack outputs (pulumi/pulumi@v3.259.0 sdk/nodejs/cmd/run/run.ts,
 * "If the exported value was itself a Function").
 */
import * as pulumi from "@pulumi/pulumi";
import { rawConfigFromPulumi, secretsFromPulumi } from "./config/load";
import {
  MANAGEMENT_OUTPUT,
  MANAGEMENT_STACK_KEY,
  ManagementStackOutputs,
  parseManagementStackOutputs,
  readManagementStack,
} from "./config/management-stack";
import { ConfigValidationError } from "./config/problems";
import { ConfigReader } from "./config/reader";
import { CONFIG_NAMESPACE, configWarnings, validateEnvironment } from "./config/validate";
import { deployEnvironment, EnvironmentOutputs } from "./program";

/** The stack outputs (`pulumi stack output`), as the README's table of outputs lists them. */
interface StackOutputs {
  /** Rancher's URL, CA and addresses for downstream stacks; only in the stack that owns Rancher. */
  rancher: EnvironmentOutputs["rancher"] | null;
  /** The `<host>` records (ip, hostnames) this stack keeps on the libvirt network; null when it keeps none. */
  libvirtDnsRecords: EnvironmentOutputs["libvirtDnsRecords"] | null;
  /** Node name -> true once its firewall is ready for RKE2; {} when the stack prepares no node. */
  preparedNodes: EnvironmentOutputs["preparedNodes"];
  /** Nodes to reboot by hand: NetworkManager's unmanaged devices changed while RKE2 was installed. */
  nodesRequiringReboot: EnvironmentOutputs["nodesRequiringReboot"];
  /** Management nodes the next `pulumi up` restarts (another release or config.yaml, or owed). */
  nodesPendingRestart: EnvironmentOutputs["nodesPendingRestart"];
  /**
   * The management cluster: its release, servers in join order and agents (name, ip), and its
   * registration URL; null when the stack does not run RKE2 there.
   */
  managementCluster: EnvironmentOutputs["managementCluster"] | null;
  /** rke2-coredns values per downstream cluster, as Rancher chartValues YAML. */
  downstreamChartValues: EnvironmentOutputs["downstreamChartValues"];
  /** Per downstream cluster: Rancher's cluster id, its kubeconfig and registration token (secrets). */
  downstreamClusters: EnvironmentOutputs["downstreamClusters"];
}

/**
 * The `rancher` output of the stack `managementStack` names, through a StackReference (read in
 * previews too); undefined when the stack names none.
 */
async function readManagementOutputs(
  values: Readonly<Record<string, unknown>>,
): Promise<ManagementStackOutputs | undefined> {
  const r = new ConfigReader(CONFIG_NAMESPACE);
  const name = readManagementStack(r, values[MANAGEMENT_STACK_KEY]);
  // A malformed name is reported with every other problem by validateEnvironment.
  if (name === undefined) return undefined;
  // Named after the key, so the engine's own error for a stack it cannot read names it.
  const reference = new pulumi.StackReference(MANAGEMENT_STACK_KEY, { name });
  const details = await reference.getOutputDetails(MANAGEMENT_OUTPUT);
  const value = details.value ?? details.secretValue;
  return parseManagementStackOutputs(value, `${r.key(MANAGEMENT_STACK_KEY)} (stack "${name}")`);
}

async function main(): Promise<StackOutputs> {
  const stack = pulumi.getStack();
  const raw = rawConfigFromPulumi();
  let managementOutputs: ManagementStackOutputs | undefined;
  try {
    managementOutputs = await readManagementOutputs(raw.values);
  } catch (err) {
    const message = (err as Error).message;
    throw new pulumi.RunError(
      message.includes(MANAGEMENT_STACK_KEY)
        ? message
        : `${CONFIG_NAMESPACE}:${MANAGEMENT_STACK_KEY}: the management stack's outputs cannot ` +
            `be read (${message}); check the name and that the stack exists in this backend.`,
    );
  }
  const { model, problems } = validateEnvironment(stack, raw, {
    requireSecrets: true,
    managementOutputs,
  });
  if (!model) {
    throw new pulumi.RunError(new ConfigValidationError(stack, problems).message);
  }
  for (const w of configWarnings(model, raw)) void pulumi.log.warn(`${w.key}: ${w.message}`);
  const estate = deployEnvironment(model, secretsFromPulumi());
  return {
    rancher: estate.rancher ?? null,
    libvirtDnsRecords: estate.libvirtDnsRecords ?? null,
    preparedNodes: estate.preparedNodes,
    nodesRequiringReboot: estate.nodesRequiringReboot,
    nodesPendingRestart: estate.nodesPendingRestart,
    managementCluster: estate.managementCluster ?? null,
    downstreamChartValues: estate.downstreamChartValues,
    downstreamClusters: estate.downstreamClusters,
  };
}

export = main;
