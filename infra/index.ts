/** The Pulumi program: load and validate the stack config once, then declare the estate. */
import * as pulumi from "@pulumi/pulumi";
import { rawConfigFromPulumi, secretsFromPulumi } from "./config/load";
import { ConfigValidationError } from "./config/problems";
import { configWarnings, validateEnvironment } from "./config/validate";
import { deployEnvironment, EnvironmentOutputs } from "./program";

const stack = pulumi.getStack();
const raw = rawConfigFromPulumi();
const { model, problems } = validateEnvironment(stack, raw, { requireSecrets: true });
if (!model) {
  throw new pulumi.RunError(new ConfigValidationError(stack, problems).message);
}
for (const w of configWarnings(model, raw)) void pulumi.log.warn(`${w.key}: ${w.message}`);
const estate = deployEnvironment(model, secretsFromPulumi());

// The stack outputs (`pulumi stack output`), each typed by EnvironmentOutputs.
/** The `<host>` records (ip, hostnames) this stack keeps on the libvirt network; null when it keeps none. */
export const libvirtDnsRecords: EnvironmentOutputs["libvirtDnsRecords"] | null =
  estate.libvirtDnsRecords ?? null;
/** Node name -> true once its firewall is ready for RKE2; {} when the stack prepares no node. */
export const preparedNodes: EnvironmentOutputs["preparedNodes"] = estate.preparedNodes;
/** Nodes to reboot by hand: NetworkManager's unmanaged devices changed while RKE2 was installed. */
export const nodesRequiringReboot: EnvironmentOutputs["nodesRequiringReboot"] =
  estate.nodesRequiringReboot;
/** Management nodes the next `pulumi up` restarts (another release or config.yaml, or owed). */
export const nodesPendingRestart: EnvironmentOutputs["nodesPendingRestart"] =
  estate.nodesPendingRestart;
/**
 * The management cluster: its release, servers in join order and agents (name, ip), and its
 * registration URL; null when the stack does not run RKE2 there.
 */
export const managementCluster: EnvironmentOutputs["managementCluster"] | null =
  estate.managementCluster ?? null;
/** rke2-coredns values per downstream cluster, as Rancher chartValues YAML. */
export const downstreamChartValues: EnvironmentOutputs["downstreamChartValues"] =
  estate.downstreamChartValues;
/** Per downstream cluster: Rancher's cluster id, its kubeconfig and registration token (secrets). */
export const downstreamClusters: EnvironmentOutputs["downstreamClusters"] =
  estate.downstreamClusters;
