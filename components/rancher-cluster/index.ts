/**
 * A Rancher downstream custom cluster (a ClusterV2 without machine pools) and its nodes'
 * registration, in the order Rancher's planner can satisfy (rancher/rancher@v2.14.3
 * pkg/capr/planner/planner.go clusterIsSane and fullReconcile, initnode.go electInitNode):
 *   1. the ClusterV2, whose chartValues carry the cluster DNS fix, so Rancher writes the
 *      rke2-coredns HelmChartConfig before the cluster agent first resolves Rancher;
 *   2. the first group registers together, without waiting for any plan: one etcd node (the
 *      init node), a controlplane node (the same one when it has both roles) and a worker; each
 *      registration waits only until rancher-system-agent runs (Rancher plans nothing before
 *      all three roles are registered);
 *   3. a wait until the cluster is active (logging Rancher's condition message, diagnosing a
 *      cluster agent that cannot reach Rancher), then ClusterSync;
 *   4. each further etcd node alone: registration, the join gate on it (voting member, no
 *      learner), a wait and a sync (new machines get their first plan at once, so etcd nodes
 *      registered together would join etcd together);
 *   5. each further control-plane node, followed by a wait and a sync;
 *   6. the remaining workers in parallel, then a last wait and sync.
 */
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as rancher2 from "@pulumi/rancher2";
import {
  DownstreamClusterSpec,
  NodeSpec,
  RKE2_JOIN_GATE,
  RANCHER_CLUSTER_WAIT,
  RANCHER_NODE_REGISTRATION,
} from "../model";
import { scriptRef } from "../assets";
import { serverRef } from "../rke2-cluster/provider";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";
import { pinnedEndpoint } from "../ssh/run-script";
import { PlannedRegistration, rancherCaChecksum, registrationPlan } from "./registration";
import { renderRkeConfigText } from "./rke-config";

export * from "./registration";
export * from "./rke-config";
export { clusterProgress, diagnoseClusterAgent, parseAgentCheck } from "./cluster-wait";

export interface RancherDownstreamClusterArgs {
  readonly cluster: DownstreamClusterSpec;
  /** The cluster's nodes in stack order (registrationPlan orders them). */
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
  /** rancher.url: registration commands must register with it. */
  readonly rancherUrl: string;
  /** Rancher API token (a secret): the waits and the registration check read Rancher's API. */
  readonly apiToken: pulumi.Input<string>;
  /** The kubelet's cluster-dns address: pods' nameserver, for the cluster agent check. */
  readonly podNameserver: string;
  /** The rancher2 provider for Rancher's API (URL, token, CA from the stack). */
  readonly provider: pulumi.ProviderResource;
  readonly sshPrivateKey: SshKey;
  /** What must finish before Rancher's API is used: Rancher's DNS records, the management
   * cluster Rancher runs on (when the same stack builds them). */
  readonly rancherReady?: pulumi.Resource[];
  /** Per node, what must finish before it registers (its preparation, the DNS records). */
  readonly prerequisites: ReadonlyMap<string, pulumi.Resource[]>;
}

/** A node's registration step, with the outputs the waits after it follow. */
type Registration = HostStepResource & {
  readonly node: pulumi.Output<string>;
  readonly planSecret: pulumi.Output<
    { readonly namespace: string; readonly secretName: string } | undefined
  >;
};

/** What every step of one cluster's registration shares. */
interface ClusterSteps {
  readonly name: string;
  readonly parent: RancherDownstreamCluster;
  readonly args: RancherDownstreamClusterArgs;
  readonly clusterV2: rancher2.ClusterV2;
  /** The node registration command Rancher gives (a secret). */
  readonly command: pulumi.Output<string>;
  readonly apiToken: pulumi.Output<string>;
  /** The plan's first etcd node: Rancher's init node. */
  readonly initNode: NodeSpec;
}

const RKE2_SCRIPTS = path.join(__dirname, "..", "rke2-cluster");

/**
 * The ClusterV2 (step 1): RKE2's settings for Rancher to apply, with chartValues carrying the
 * cluster DNS fix. It holds etcd and every workload: destroying the stack leaves it in Rancher.
 */
function downstreamClusterV2(
  name: string,
  args: RancherDownstreamClusterArgs,
  parent: RancherDownstreamCluster,
): rancher2.ClusterV2 {
  const { cluster } = args;
  const rke = renderRkeConfigText(cluster, args.kubeletArgs, args.chartValues);
  return new rancher2.ClusterV2(
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
    {
      parent,
      provider: args.provider,
      retainOnDelete: true,
      dependsOn: args.rancherReady ?? [],
    },
  );
}

/** A node's registration through Rancher's command, after its prerequisites and `after`. */
function registerNode(
  c: ClusterSteps,
  step: PlannedRegistration,
  after: pulumi.Resource[],
): Registration {
  const { args } = c;
  const timeouts = args.cluster.joinGate;
  // The props name the outputs (`node`, `planSecret`) a dynamic resource gets.
  return <Registration>new HostStepResource(
    "nodeRegistration",
    RANCHER_NODE_REGISTRATION,
    `${c.name}-register-${step.node.name}`,
    {
      ssh: step.node.ssh,
      sshPrivateKey: args.sshPrivateKey,
      script: scriptRef(__dirname, "register-node.sh"),
    },
    {
      node: step.node.name,
      nodeIp: step.node.ip,
      cluster: args.cluster.name,
      roles: [...step.node.roles],
      registrationCommand: c.command,
      rancherUrl: args.rancherUrl,
      apiToken: c.apiToken,
      insecure: args.cluster.insecureRegistration,
      caCertificate: args.caCertificate,
      caChecksum: args.caCertificate && rancherCaChecksum(args.caCertificate),
      rancherHost: args.rancherHost,
      timeoutSeconds: timeouts.timeoutSeconds,
      pollSeconds: timeouts.pollSeconds,
      registered: undefined,
      planSecret: undefined,
    },
    {
      parent: c.parent,
      dependsOn: [c.clusterV2, ...(args.prerequisites.get(step.node.name) ?? []), ...after],
      additionalSecretOutputs: ["registrationCommand", "apiToken"],
    },
  );
}

/** The join gate on a further etcd node: a voting member, and no learner left. */
function joinGateOn(c: ClusterSteps, step: PlannedRegistration, registered: pulumi.Resource) {
  const timeouts = c.args.cluster.joinGate;
  return new HostStepResource(
    "joinGate",
    RKE2_JOIN_GATE,
    `${c.name}-gate-${step.node.name}`,
    {
      ssh: step.node.ssh,
      sshPrivateKey: c.args.sshPrivateKey,
      script: scriptRef(RKE2_SCRIPTS, "join-gate.sh"),
    },
    {
      node: step.node.name,
      membersScript: scriptRef(RKE2_SCRIPTS, "etcd-members.sh"),
      timeoutSeconds: timeouts.timeoutSeconds,
      pollSeconds: timeouts.pollSeconds,
      serverStartedAt: "registered through Rancher",
      firstServer: serverRef(c.initNode),
    },
    { parent: c.parent, dependsOn: [registered] },
  );
}

/** The machines a wait follows: each registration's plan secret, as its node names it. */
function followed(registrations: readonly Registration[]) {
  return pulumi
    .all(registrations.map((r) => pulumi.all([r.node, r.planSecret])))
    .apply((rows) =>
      rows
        .filter(([, secret]) => secret !== undefined)
        .map(([node, secret]) => ({ node, ...secret! })),
    );
}

/**
 * A wait until each machine registered in a step is planned, applied and healthy in Rancher and
 * the cluster is active after them (saying why not), then ClusterSync for the kubeconfig.
 */
function activeThenSync(
  c: ClusterSteps,
  suffix: string,
  registrations: readonly Registration[],
  after: pulumi.Resource[],
): rancher2.ClusterSync {
  const { args, initNode } = c;
  const timeouts = args.cluster.joinGate;
  // Where cattle-cluster-agent may run: any node, control-plane nodes preferred (template.go).
  const agentNodes = [
    ...args.nodes.filter((n) => n.roles.includes("controlplane")),
    ...args.nodes.filter((n) => !n.roles.includes("controlplane")),
  ].map((n) => ({ node: n.name, connection: pinnedEndpoint(n.ssh) }));
  const wait = new HostStepResource(
    "clusterWait",
    RANCHER_CLUSTER_WAIT,
    `${c.name}-active-${suffix}`,
    { ssh: initNode.ssh, sshPrivateKey: args.sshPrivateKey },
    {
      cluster: args.cluster.name,
      after: suffix,
      clusterId: c.clusterV2.clusterV1Id,
      rancherUrl: args.rancherUrl,
      apiToken: c.apiToken,
      caCertificate: args.caCertificate,
      timeoutSeconds: timeouts.timeoutSeconds,
      pollSeconds: timeouts.pollSeconds,
      initNode: initNode.name,
      agentNodes,
      machines: followed(registrations),
      checkScript: scriptRef(__dirname, "cluster-agent-check.sh"),
      rancherHost: args.rancherHost,
      podNameserver: args.podNameserver,
      clusterDomain: args.cluster.clusterDomain,
    },
    { parent: c.parent, dependsOn: after, additionalSecretOutputs: ["apiToken"] },
  );
  return new rancher2.ClusterSync(
    `${c.name}-sync-${suffix}`,
    { clusterId: c.clusterV2.clusterV1Id, stateConfirm: 2 },
    {
      parent: c.parent,
      provider: args.provider,
      dependsOn: [wait],
      customTimeouts: { create: `${timeouts.timeoutSeconds}s` },
    },
  );
}

/**
 * Steps 2-6: the nodes in registrationPlan's order, each step after the previous step's sync.
 * Returns the sync after every node, whose kubeconfig the stack gives.
 */
function registerInPlanOrder(c: ClusterSteps, plan: readonly PlannedRegistration[]) {
  let lastSync: rancher2.ClusterSync | undefined;
  for (const stepNumber of [...new Set(plan.map((p) => p.step))]) {
    const steps = plan.filter((p) => p.step === stepNumber);
    const after = lastSync ? [lastSync] : [];
    const group = steps[0].group;
    switch (group) {
      case "first":
      case "worker": {
        const registered = steps.map((s) => registerNode(c, s, after));
        const suffix = group === "first" ? c.initNode.name : "workers";
        lastSync = activeThenSync(c, suffix, registered, registered);
        break;
      }
      case "etcd": {
        const registered = registerNode(c, steps[0], after);
        const gate = joinGateOn(c, steps[0], registered);
        lastSync = activeThenSync(c, steps[0].node.name, [registered], [gate]);
        break;
      }
      case "control-plane": {
        const registered = registerNode(c, steps[0], after);
        lastSync = activeThenSync(c, steps[0].node.name, [registered], [registered]);
        break;
      }
      default: {
        const unknown: never = group;
        throw new pulumi.ResourceError(`unknown registration group ${String(unknown)}`, c.parent);
      }
    }
  }
  return lastSync!;
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
    let plan: PlannedRegistration[];
    try {
      plan = registrationPlan(args.nodes);
    } catch (err) {
      throw new pulumi.ResourceError((err as Error).message, this);
    }
    const clusterV2 = downstreamClusterV2(name, args, this);
    const token = clusterV2.clusterRegistrationToken;
    const finalSync = registerInPlanOrder(
      {
        name,
        parent: this,
        args,
        clusterV2,
        command: pulumi.secret(
          args.cluster.insecureRegistration ? token.insecureNodeCommand : token.nodeCommand,
        ),
        apiToken: pulumi.secret(args.apiToken),
        initNode: plan[0].node,
      },
      plan,
    );
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
