/** The Pulumi program: load and validate the stack config once, then declare the estate. */
import * as pulumi from "@pulumi/pulumi";
import { rawConfigFromPulumi, secretsFromPulumi } from "./config/load";
import { ConfigValidationError } from "./config/problems";
import { configWarnings, validateEnvironment } from "./config/validate";
import { deployEnvironment } from "./program";

const stack = pulumi.getStack();
const { model, problems } = validateEnvironment(stack, rawConfigFromPulumi(), {
  requireSecrets: true,
});
if (!model) {
  throw new pulumi.RunError(new ConfigValidationError(stack, problems).message);
}
for (const w of configWarnings(model)) void pulumi.log.warn(`${w.key}: ${w.message}`);
const estate = deployEnvironment(model, secretsFromPulumi());

/** The records on the libvirt network; null when this stack does not manage them. */
export const libvirtDnsRecords = estate.libvirtDnsRecords ?? null;
export const preparedNodes = estate.preparedNodes;
/** Nodes to reboot by hand: NetworkManager's unmanaged devices changed while RKE2 was installed. */
export const nodesRequiringReboot = estate.nodesRequiringReboot;
export const nodesPendingRestart = estate.nodesPendingRestart;
export const downstreamChartValues = estate.downstreamChartValues;
/** Per downstream cluster: Rancher's cluster id and its kubeconfig (a secret). */
export const downstreamClusters = estate.downstreamClusters;
