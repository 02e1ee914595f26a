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
    let plan: PlannedRegistration[];
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
    const apiToken = pulumi.secret(args.apiToken);
    const script = scriptRef(__dirname, "register-node.sh");
    const checkScript = scriptRef(__dirname, "cluster-agent-check.sh");
    const gateScript = scriptRef(path.join(__dirname, "..", "rke2-cluster"), "join-gate.sh");
    const membersScript = scriptRef(path.join(__dirname, "..", "rke2-cluster"), "etcd-members.sh");
    const initNode = plan[0].node;
    const timeouts = cluster.joinGate;
    // Where cattle-cluster-agent may run: any node, control-plane nodes preferred (template.go).
    const agentNodes = [
      ...args.nodes.filter((n) => n.roles.includes("controlplane")),
      ...args.nodes.filter((n) => !n.roles.includes("controlplane")),
    ].map((n) => ({ node: n.name, connection: pinnedEndpoint(n.ssh) }));

    // The machines a wait follows: each registration's plan secret, as its node names it.
    const followed = (registrations: readonly Registration[]) =>
      pulumi
        .all(registrations.map((r) => pulumi.all([r.node, r.planSecret])))
        .apply((rows) =>
          rows
            .filter(([, secret]) => secret !== undefined)
            .map(([node, secret]) => ({ node, ...secret! })),
        );
    // A wait until each machine registered in a step is planned, applied and healthy in Rancher
    // and the cluster is active after them (saying why not), then ClusterSync for the kubeconfig.
    const activeThenSync = (
      suffix: string,
      registrations: readonly Registration[],
      after: pulumi.Resource[],
    ) => {
      const wait = new HostStepResource(
        "clusterWait",
        RANCHER_CLUSTER_WAIT,
        `${name}-active-${suffix}`,
        { ssh: initNode.ssh, sshPrivateKey: args.sshPrivateKey },
        {
          cluster: cluster.name,
          after: suffix,
          clusterId: clusterV2.clusterV1Id,
          rancherUrl: args.rancherUrl,
          apiToken,
          caCertificate: args.caCertificate,
          timeoutSeconds: timeouts.timeoutSeconds,
          pollSeconds: timeouts.pollSeconds,
          initNode: initNode.name,
          agentNodes,
          machines: followed(registrations),
          checkScript,
          rancherHost: args.rancherHost,
          podNameserver: args.podNameserver,
          clusterDomain: cluster.clusterDomain,
        },
        { parent: this, dependsOn: after, additionalSecretOutputs: ["apiToken"] },
      );
      return new rancher2.ClusterSync(
        `${name}-sync-${suffix}`,
        { clusterId: clusterV2.clusterV1Id, stateConfirm: 2 },
        {
          ...rancherOpts,
          dependsOn: [wait],
          customTimeouts: { create: `${timeouts.timeoutSeconds}s` },
        },
      );
    };
    // The props name the outputs (`node`, `planSecret`) a dynamic resource gets.
    const registration = (step: PlannedRegistration, after: pulumi.Resource[]) =>
      <Registration>new HostStepResource(
        "nodeRegistration",
        RANCHER_NODE_REGISTRATION,
        `${name}-register-${step.node.name}`,
        { ssh: step.node.ssh, sshPrivateKey: args.sshPrivateKey, script },
        {
          node: step.node.name,
          nodeIp: step.node.ip,
          cluster: cluster.name,
          roles: [...step.node.roles],
          registrationCommand: command,
          rancherUrl: args.rancherUrl,
          apiToken,
          insecure: cluster.insecureRegistration,
          caCertificate: args.caCertificate,
          caChecksum: args.caCertificate && rancherCaChecksum(args.caCertificate),
          rancherHost: args.rancherHost,
          timeoutSeconds: timeouts.timeoutSeconds,
          pollSeconds: timeouts.pollSeconds,
          registered: undefined,
          planSecret: undefined,
        },
        {
          parent: this,
          dependsOn: [clusterV2, ...(args.prerequisites.get(step.node.name) ?? []), ...after],
          additionalSecretOutputs: ["registrationCommand", "apiToken"],
        },
      );
    const joinGate = (step: PlannedRegistration, registered: pulumi.Resource) =>
      new HostStepResource(
        "joinGate",
        RKE2_JOIN_GATE,
        `${name}-gate-${step.node.name}`,
        { ssh: step.node.ssh, sshPrivateKey: args.sshPrivateKey, script: gateScript },
        {
          node: step.node.name,
          membersScript,
          timeoutSeconds: timeouts.timeoutSeconds,
          pollSeconds: timeouts.pollSeconds,
          serverStartedAt: "registered through Rancher",
          firstServer: serverRef(initNode),
        },
        { parent: this, dependsOn: [registered] },
      );

    // Steps in registrationPlan's order; each step waits for the previous step's sync.
    let lastSync: rancher2.ClusterSync | undefined;
    for (const stepNumber of [...new Set(plan.map((p) => p.step))]) {
      const steps = plan.filter((p) => p.step === stepNumber);
      const after = lastSync ? [lastSync] : [];
      const group = steps[0].group;
      switch (group) {
        case "first":
        case "worker": {
          const registered = steps.map((s) => registration(s, after));
          const suffix = group === "first" ? initNode.name : "workers";
          lastSync = activeThenSync(suffix, registered, registered);
          break;
        }
        case "etcd": {
          const registered = registration(steps[0], after);
          const gate = joinGate(steps[0], registered);
          lastSync = activeThenSync(steps[0].node.name, [registered], [gate]);
          break;
        }
        case "control-plane": {
          const registered = registration(steps[0], after);
          lastSync = activeThenSync(steps[0].node.name, [registered], [registered]);
          break;
        }
        default: {
          const unknown: never = group;
          throw new pulumi.ResourceError(`unknown registration group ${String(unknown)}`, this);
        }
      }
    }
    // The stack's kubeconfig comes from the sync after every node.
    const finalSync = lastSync!;
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
