/** The ClusterV2 `rkeConfig` text a downstream cluster is created with. Pure. */
import * as YAML from "yaml";
import { DownstreamClusterSpec } from "../model";
import { clusterWideRke2Settings, withPassThrough } from "../rke2-cluster/config";

/** The ClusterV2 `rkeConfig` pieces that are text: what `render` writes for review. */
export interface RkeConfigText {
  /** RKE2 settings every node of the cluster shares. */
  readonly machineGlobalConfig: string;
  /** Settings for every machine (selector-less), e.g. the system default registry. */
  readonly machineSelectorConfig?: string;
  /** Helm values keyed by chart name; rke2-coredns carries the DNS fix. */
  readonly chartValues: string;
}

/** Renders the text pieces of a downstream cluster's rkeConfig. */
export function renderRkeConfigText(
  cluster: DownstreamClusterSpec,
  kubeletArgs: readonly string[],
  chartValues: string,
): RkeConfigText {
  // rancher.downstreamClusters[i].extraConfig: every machine's config, as Rancher writes it.
  const machineGlobalConfig = YAML.stringify(
    withPassThrough(clusterWideRke2Settings(cluster, kubeletArgs), cluster.extraConfig),
  );
  const machineSelectorConfig =
    cluster.privateRegistry === undefined
      ? undefined
      : YAML.stringify({ "system-default-registry": cluster.privateRegistry });
  return { machineGlobalConfig, machineSelectorConfig, chartValues };
}
