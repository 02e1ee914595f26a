import * as YAML from "yaml";
import { ClusterSettings, NodeSpec } from "../../infra/config/model";

export interface Rke2ServerConfigInput {
  readonly cluster: ClusterSettings;
  readonly node: NodeSpec;
  /** The first server's address; absent for the first server itself. */
  readonly joinAddress?: string;
  /** The join token, or a redaction marker when rendering for review. */
  readonly token: string;
  /** Extra kubelet args, e.g. cluster-dns=<node-local IP> when NodeLocalDNS runs in IPVS mode. */
  readonly kubeletArgs?: readonly string[];
}

/**
 * The RKE2 settings every server of a cluster must share (`rke2 server --help` keys): the
 * management servers' config.yaml carries them, and a Rancher downstream cluster's
 * `machineGlobalConfig` carries the same keys.
 */
export function clusterWideRke2Settings(
  cluster: ClusterSettings,
  kubeletArgs: readonly string[] = [],
): Record<string, unknown> {
  const settings: Record<string, unknown> = { cni: cluster.cni };
  if (cluster.tlsSan.length > 0) settings["tls-san"] = [...cluster.tlsSan];
  settings["cluster-cidr"] = cluster.clusterCidr;
  settings["service-cidr"] = cluster.serviceCidr;
  settings["cluster-dns"] = cluster.clusterDnsIp;
  settings["cluster-domain"] = cluster.clusterDomain;
  if (cluster.kubeProxyMode === "ipvs") settings["kube-proxy-arg"] = ["proxy-mode=ipvs"];
  if (kubeletArgs.length > 0) settings["kubelet-arg"] = [...kubeletArgs];
  settings["service-node-port-range"] = cluster.nodePortRange;
  return settings;
}

/** Renders /etc/rancher/rke2/config.yaml for one server. Keys follow `rke2 server --help`. */
export function renderRke2ServerConfig(input: Rke2ServerConfigInput): string {
  const { cluster, node } = input;
  const config: Record<string, unknown> = {};
  if (input.joinAddress !== undefined) config.server = `https://${input.joinAddress}:9345`;
  config.token = input.token;
  config["node-name"] = node.name;
  config["node-ip"] = node.ip;
  Object.assign(config, clusterWideRke2Settings(cluster, input.kubeletArgs));
  if (cluster.privateRegistry !== undefined)
    config["system-default-registry"] = cluster.privateRegistry;
  config["etcd-snapshot-schedule-cron"] = cluster.etcdSnapshot.scheduleCron;
  config["etcd-snapshot-retention"] = cluster.etcdSnapshot.retention;
  return YAML.stringify(config);
}

export interface Rke2AgentConfigInput {
  readonly node: NodeSpec;
  readonly serverAddress: string;
  readonly token: string;
  readonly kubeletArgs?: readonly string[];
  readonly privateRegistry?: string;
}

/** Renders /etc/rancher/rke2/config.yaml for an agent. */
export function renderRke2AgentConfig(input: Rke2AgentConfigInput): string {
  const config: Record<string, unknown> = {
    server: `https://${input.serverAddress}:9345`,
    token: input.token,
    "node-name": input.node.name,
    "node-ip": input.node.ip,
  };
  if (input.kubeletArgs && input.kubeletArgs.length > 0)
    config["kubelet-arg"] = [...input.kubeletArgs];
  if (input.privateRegistry !== undefined)
    config["system-default-registry"] = input.privateRegistry;
  return YAML.stringify(config);
}
