/**
 * A Rancher downstream custom cluster (a ClusterV2 without machine pools) and its nodes'
 * registration, in the order that keeps seed 000 from recurring:
 *   1. the ClusterV2, whose chartValues carry the cluster DNS fix, so Rancher writes the
 *      rke2-coredns HelmChartConfig before the cluster agent first resolves Rancher;
 *   2. the first etcd + control-plane node registers (after its preparation and the libvirt DNS
 *      records), and waits for its rke2-server;
 *   3. ClusterSync waits for the cluster to be active;
 *   4. each further etcd / control-plane node registers, one at a time, each followed by a sync;
 *   5. workers register after the last sync, in parallel.
 */
import * as pulumi from "@pulumi/pulumi";
import * as rancher2 from "@pulumi/rancher2";
import * as YAML from "yaml";
import { DownstreamClusterSpec, NodeSpec } from "../../infra/config/model";
import { componentFile } from "../assets";
import { clusterWideRke2Settings } from "../rke2-cluster/config";
import { pinnedTarget } from "../ssh/run-script";
import { nodeRegistrationProvider } from "./provider";
import { rancherCaChecksum, registrationPlan } from "./registration";

export * from "./registration";

class NodeRegistrationResource extends pulumi.dynamic.Resource {
  constructor(name: string, props: pulumi.Inputs, opts: pulumi.CustomResourceOptions) {
    super(nodeRegistrationProvider, name, props, opts, "rancher", "NodeRegistration");
  }
}

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
  const machineGlobalConfig = YAML.stringify(clusterWideRke2Settings(cluster, kubeletArgs));
  const machineSelectorConfig =
    cluster.privateRegistry === undefined
      ? undefined
      : YAML.stringify({ "system-default-registry": cluster.privateRegistry });
  return { machineGlobalConfig, machineSelectorConfig, chartValues };
}

export interface RancherDownstreamClusterArgs {
  readonly cluster: DownstreamClusterSpec;
  /** The cluster's nodes in stack order; the first with etcd + controlplane registers first. */
  readonly nodes: readonly NodeSpec[];
  /** rke2-coredns values as Rancher chartValues YAML (the cluster DNS fix). */
  readonly chartValues: string;
  /** Extra kubelet args (cluster-dns for NodeLocalDNS in IPVS mode). */
  readonly kubeletArgs: readonly string[];
  /** Rancher's CA exactly as Rancher serves it at /cacerts: nodes trust it, and the
   * registration command must pin its SHA-256 as --ca-checksum. */
  readonly caCertificate?: string;
  /** Rancher's hostname. */
  readonly rancherHost: string;
  /** The rancher2 provider for Rancher's API (URL, token, CA from the stack). */
  readonly provider: pulumi.ProviderResource;
  readonly sshPrivateKey: pulumi.Input<string>;
  /** What must finish before Rancher's API is used: Rancher's DNS records, the management
   * cluster Rancher runs on (when the same stack builds them). */
  readonly rancherReady?: pulumi.Resource[];
  /** Per node, what must finish before it registers (its preparation, the DNS records). */
  readonly prerequisites: ReadonlyMap<string, pulumi.Resource[]>;
}

export class RancherDownstreamCluster extends pulumi.ComponentResource {
  /** Rancher's v1 cluster id (c-m-...). */
  public readonly clusterId: pulumi.Output<string>;
  /** The cluster's kubeconfig from the last sync; a secret. */
  public readonly kubeconfig: pulumi.Output<string>;
  /** The registration token; a secret. */
  public readonly registrationToken: pulumi.Output<string>;

  constructor(
    name: string,
    args: RancherDownstreamClusterArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("rke2remediation:rancher:DownstreamCluster", name, {}, opts);
    const { cluster } = args;
    let plan;
    try {
      plan = registrationPlan(args.nodes);
    } catch (err) {
      throw new pulumi.ResourceError((err as Error).message, this);
    }
    const rke = renderRkeConfigText(cluster, args.kubeletArgs, args.chartValues);
    const rancherOpts = { parent: this, provider: args.provider };
    const clusterV2 = new rancher2.ClusterV2(
      name,
      {
        name: cluster.name,
        kubernetesVersion: cluster.version,
        rkeConfig: {
          machineGlobalConfig: rke.machineGlobalConfig,
          machineSelectorConfigs: rke.machineSelectorConfig
            ? [{ config: rke.machineSelectorConfig }]
            : [],
          chartValues: rke.chartValues,
          etcd: {
            snapshotScheduleCron: cluster.etcdSnapshot.scheduleCron,
            snapshotRetention: cluster.etcdSnapshot.retention,
          },
          upgradeStrategy: { controlPlaneConcurrency: "1", workerConcurrency: "1" },
        },
      },
      // The cluster holds etcd and every workload: destroying the stack leaves it in Rancher.
      { ...rancherOpts, retainOnDelete: true, dependsOn: args.rancherReady ?? [] },
    );
    const token = clusterV2.clusterRegistrationToken;
    const command = pulumi.secret(
      cluster.insecureRegistration ? token.insecureNodeCommand : token.nodeCommand,
    );
    const script = componentFile(__dirname, "register-node.sh");
    const sync = (suffix: string, after: pulumi.Resource[]) =>
      new rancher2.ClusterSync(
        `${name}-sync-${suffix}`,
        { clusterId: clusterV2.clusterV1Id, stateConfirm: 2 },
        {
          ...rancherOpts,
          dependsOn: after,
          customTimeouts: { create: `${cluster.joinGate.timeoutSeconds}s` },
        },
      );
    const registration = (step: (typeof plan)[number], after: pulumi.Resource[]) =>
      new NodeRegistrationResource(
        `${name}-register-${step.node.name}`,
        {
          node: step.node.name,
          nodeIp: step.node.ip,
          cluster: cluster.name,
          roles: [...step.node.roles],
          connection: pinnedTarget(step.node.ssh),
          sshPrivateKey: pulumi.secret(args.sshPrivateKey),
          registrationCommand: command,
          insecure: cluster.insecureRegistration,
          caCertificate: args.caCertificate,
          caChecksum: args.caCertificate && rancherCaChecksum(args.caCertificate),
          rancherHost: args.rancherHost,
          script,
          timeoutSeconds: cluster.joinGate.timeoutSeconds,
          pollSeconds: cluster.joinGate.pollSeconds,
          registered: undefined,
        },
        {
          parent: this,
          dependsOn: [clusterV2, ...(args.prerequisites.get(step.node.name) ?? []), ...after],
          additionalSecretOutputs: ["sshPrivateKey", "registrationCommand"],
        },
      );

    let lastSync: rancher2.ClusterSync | undefined;
    const workers: pulumi.Resource[] = [];
    for (const step of plan) {
      switch (step.step) {
        case "first":
        case "control-plane": {
          const registered = registration(step, lastSync ? [lastSync] : []);
          lastSync = sync(step.node.name, [registered]);
          break;
        }
        case "worker": {
          workers.push(registration(step, [lastSync!]));
          break;
        }
        default: {
          const unknown: never = step.step;
          throw new pulumi.ResourceError(`unknown registration step ${String(unknown)}`, this);
        }
      }
    }
    // The stack's kubeconfig comes from a sync after every node, workers included.
    const finalSync = workers.length > 0 ? sync("workers", workers) : lastSync!;
    this.clusterId = clusterV2.clusterV1Id;
    this.kubeconfig = pulumi.secret(finalSync.kubeConfig);
    this.registrationToken = pulumi.secret(token.token);
    this.registerOutputs({
      clusterId: this.clusterId,
      kubeconfig: this.kubeconfig,
      registrationToken: this.registrationToken,
    });
  }
}
