import * as YAML from "yaml";
import { ClusterSettings, NodeSpec, Rke2PassThrough } from "../model";
import { ARG_LIST_FLAGS_MANAGED, argFlag, isArgList, MANAGED_RKE2_KEYS } from "./settings";

// RKE2's settings vocabulary is ./settings.ts; these stay importable from here.
export { ARG_LIST_FLAGS_MANAGED, argFlag, isArgList, MANAGED_RKE2_KEYS };

const listOf = (value: unknown): unknown[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/**
 * Lays pass-through settings over the rendered keys, in order (cluster, role, node): a later
 * level replaces a setting of an earlier one, and `*-arg` lists gain the entries of flags they
 * lack (an entry for a flag already there replaces it). A setting written `name+` appends to
 * `name` as RKE2 does (k3s-io/k3s@7464a828:pkg/configfilearg/parser.go), folded into the one
 * key here so that the file holds what RKE2 will read.
 */
export function withPassThrough(
  rendered: Record<string, unknown>,
  ...levels: (Rke2PassThrough | undefined)[]
): Record<string, unknown> {
  const config: Record<string, unknown> = { ...rendered };
  for (const level of levels) {
    for (const [written, value] of Object.entries(level ?? {})) {
      const key = written.replace(/\+$/, "");
      const base = config[key];
      const appends = written !== key && base !== undefined;
      if (isArgList(key) && Array.isArray(base) && (Array.isArray(value) || appends)) {
        const entries = listOf(value);
        const flags = new Set(entries.map(argFlag));
        config[key] = [...base.filter((e) => !flags.has(argFlag(e))), ...entries];
      } else config[key] = appends ? [...listOf(base), ...listOf(value)] : value;
    }
  }
  return config;
}

/**
 * Where joining servers and agents register (`server: https://<it>:9345`): the stack's fixed
 * registration address when it has one, otherwise the first server's IP. The first server's own
 * IP needs no tls-san entry (it is in its certificate already); a registration address does.
 * rancher/rke2-docs@9477b7b1:docs/install/ha.md ("Configure the Fixed Registration Address";
 * tls-san "to avoid certificate errors with the fixed registration address");
 * rancher/rke2-docs@9477b7b1:docs/reference/server_config.md (tls-san adds "additional" names;
 * tls-san-security refuses names not associated with the apiserver service, server nodes or
 * tls-san).
 */
export function registrationAddressOf(cluster: ClusterSettings, firstServer: NodeSpec): string {
  return cluster.registrationAddress ?? firstServer.ip;
}

/** RKE2's supervisor URL at an address: config.yaml's `server`, where nodes register. */
export function supervisorUrl(address: string): string {
  return `https://${address}:9345`;
}

/** The registration address when the stack sets one and tls-san does not list it. */
export function registrationAddressMissingFromTlsSan(cluster: ClusterSettings): string | undefined {
  const address = cluster.registrationAddress;
  if (address === undefined) return undefined;
  const listed = cluster.tlsSan.some((san) => san.toLowerCase() === address.toLowerCase());
  return listed ? undefined : address;
}

export interface Rke2ServerConfigInput {
  readonly cluster: ClusterSettings;
  readonly node: NodeSpec;
  /** The registration address (registrationAddressOf); absent for the first server itself. */
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
  if (input.joinAddress !== undefined) config.server = supervisorUrl(input.joinAddress);
  config.token = input.token;
  config["node-name"] = node.name;
  config["node-ip"] = node.ip;
  Object.assign(config, clusterWideRke2Settings(cluster, input.kubeletArgs));
  // A server flag only; agents get the registry from the server (see renderRke2AgentConfig).
  if (cluster.privateRegistry !== undefined)
    config["system-default-registry"] = cluster.privateRegistry;
  config["etcd-snapshot-schedule-cron"] = cluster.etcdSnapshot.scheduleCron;
  config["etcd-snapshot-retention"] = cluster.etcdSnapshot.retention;
  return YAML.stringify(
    withPassThrough(config, cluster.extraConfig, cluster.serverConfig, node.extraConfig),
  );
}

export interface Rke2AgentConfigInput {
  readonly cluster: ClusterSettings;
  readonly node: NodeSpec;
  /** The registration address (registrationAddressOf). */
  readonly serverAddress: string;
  /** The join token, or a redaction marker when rendering for review. */
  readonly token: string;
  readonly kubeletArgs?: readonly string[];
}

/**
 * Renders /etc/rancher/rke2/config.yaml for an agent. Keys follow `rke2 agent --help`
 * (rancher/rke2@v1.35.6+rke2r1:pkg/cli/cmds/agent.go):
 * - `kube-proxy-arg` is an agent flag: each node's kube-proxy takes it from that node's own
 *   config, so an agent needs proxy-mode=ipvs as the servers have it.
 * - `system-default-registry` is not: it is hidden there as "(deprecated) This flag is no longer
 *   supported on agents"; on an agent it is a no-op and the registry comes from the server when
 *   the agent bootstraps (rancher/rke2@v1.35.6+rke2r1:pkg/rke2/rke2_linux.go, initExecutor;
 *   rancher/rke2@v1.35.6+rke2r1:pkg/executor/staticpod/staticpod.go, Bootstrap).
 */
export function renderRke2AgentConfig(input: Rke2AgentConfigInput): string {
  const config: Record<string, unknown> = {
    server: supervisorUrl(input.serverAddress),
    token: input.token,
    "node-name": input.node.name,
    "node-ip": input.node.ip,
  };
  if (input.cluster.kubeProxyMode === "ipvs") config["kube-proxy-arg"] = ["proxy-mode=ipvs"];
  if (input.kubeletArgs && input.kubeletArgs.length > 0)
    config["kubelet-arg"] = [...input.kubeletArgs];
  const { cluster, node } = input;
  return YAML.stringify(
    withPassThrough(config, cluster.extraConfig, cluster.agentConfig, node.extraConfig),
  );
}
