/**
 * An RKE2 cluster on prepared nodes, servers joined and changed strictly one at a time (seed
 * 003: etcd admits one learner, and a learner that cannot reach its peers never becomes a
 * voter). For each server, in order:
 *   1. its /etc/rancher/rke2/config.yaml (mode 0600, the token a secret), after its node's
 *      preparation and after the previous server's join gate;
 *   2. RKE2 on the node (start-plan.ts decides from facts read on the hosts): installed and
 *      started; upgraded and restarted when the version changed, restarted when config.yaml
 *      changed; a node found running when first adopted is only verified. etcd data is never
 *      deleted: the first server bootstraps only when no other server holds etcd data, and a
 *      joining server's data that no member knows is moved aside, only when it is created;
 *   3. the join gate: /readyz, Node Ready, EtcdIsVoter, no learner in etcd, and for a joining
 *      server etcd's cluster ID the first server's. It runs again after every restart, before
 *      the next server's step.
 * Agents follow the last server's gate (RKE2's upgrade order: servers one at a time, then
 * agents), in parallel.
 */
import * as pulumi from "@pulumi/pulumi";
import {
  ArtifactsSource,
  ClusterSettings,
  NodeSpec,
  RKE2_JOIN_GATE,
  RKE2_KUBECONFIG,
  RKE2_NODE_START,
} from "../model";
import { scriptRef } from "../assets";
import { desiredManagedKeys, withoutToken } from "./config-adoption";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";
import {
  registrationAddressMissingFromTlsSan,
  registrationAddressOf,
  renderRke2AgentConfig,
  renderRke2ServerConfig,
  supervisorUrl,
} from "./config";
import { NodeStartInputs, serverRef } from "./provider";
import { desiredRegistryEntries, RegistriesSpec, RegistryAuth } from "./registries";

export { parseRegistryAuth } from "./registries";

export { renderRke2ServerConfig, renderRke2AgentConfig } from "./config";
export { membershipOf, parseMemberList } from "./etcd-members";

class NodeStartResource extends HostStepResource {
  /** When RKE2 was last started or restarted on the node. */
  declare public readonly startedAt: pulumi.Output<string>;
  /** RKE2's data-dir there, as config.yaml sets it. */
  declare public readonly dataDir: pulumi.Output<string>;
  /** As found on the host: the managed keys, the release, a restart still owed. */
  declare public readonly managedKeys: pulumi.Output<Record<string, string>>;
  declare public readonly managedRegistries: pulumi.Output<Record<string, string> | undefined>;
  declare public readonly installedVersion: pulumi.Output<string>;
  declare public readonly restartPending: pulumi.Output<string>;
}

class KubeconfigResource extends HostStepResource {
  declare public readonly kubeconfig: pulumi.Output<string>;
}

export interface Rke2ClusterArgs {
  readonly cluster: ClusterSettings;
  /** Servers in join order; the first one starts the cluster. */
  readonly servers: readonly NodeSpec[];
  readonly agents: readonly NodeSpec[];
  /** The join token; a Pulumi secret. */
  readonly token: pulumi.Input<string>;
  readonly sshPrivateKey: SshKey;
  /** Extra kubelet args (cluster-dns for NodeLocalDNS in IPVS mode). */
  readonly kubeletArgs: readonly string[];
  /** Shell command that installs RKE2 when missing; INSTALL_RKE2_VERSION and _TYPE are set. */
  readonly installCommand: string;
  /** Install from one release's artifacts, from a directory here or a mirror (./artifacts.ts). */
  readonly artifacts?: ArtifactsSource;
  readonly gateTimeoutSeconds: number;
  readonly gatePollSeconds: number;
  /** `rke2.drain`: cordon and drain a running node before RKE2 restarts there; absent, none. */
  readonly drain?: { readonly timeoutSeconds: number; readonly podSelector: string };
  /** How many agents restart at a time (`rke2.agentsMaxUnavailable`). */
  readonly agentsMaxUnavailable: number;
  /** `parallel` drops the wait for the previous gate (refused by policy; see the model). */
  readonly serverJoin: "sequential" | "parallel";
  /** Per node, what must finish before RKE2 may start there (its preparation). */
  readonly prerequisites: ReadonlyMap<string, pulumi.Resource[]>;
  /**
   * The registries.yaml entries every node gets, and their credentials (a secret); absent, the
   * nodes' registries.yaml is left as it is.
   */
  readonly registries?: {
    readonly spec: RegistriesSpec;
    readonly auth: pulumi.Input<Record<string, RegistryAuth>>;
  };
}

/** A node of the cluster, as the cluster's outputs list it. */
export interface Rke2ClusterNode {
  readonly name: string;
  readonly ip: string;
}

export class Rke2Cluster extends pulumi.ComponentResource {
  /** Join gates in server order; the last one is when the control plane is complete. */
  public readonly gates: pulumi.Resource[] = [];
  /** The RKE2 release every node runs once converged. */
  public readonly version: pulumi.Output<string>;
  /** The servers in join order: the first one started the cluster, each later one joined it. */
  public readonly servers: pulumi.Output<Rke2ClusterNode[]>;
  public readonly agents: pulumi.Output<Rke2ClusterNode[]>;
  /**
   * Where joining servers and agents register, `https://<address>:9345`: the cluster's fixed
   * registration address, or the first server's IP.
   */
  public readonly registrationUrl: pulumi.Output<string>;
  /**
   * Nodes whose host runs another release or another value of a managed config.yaml key than
   * the stack's, or still owes a restart a failed step left: the next pulumi up restarts them,
   * servers one at a time. A node adopted while running is listed until then.
   */
  public readonly nodesPendingRestart: pulumi.Output<string[]>;
  /**
   * The admin kubeconfig RKE2 wrote on the first server, pointed at the registration address
   * (the first server's IP unless the stack sets one) instead of the loopback; a secret.
   */
  public readonly kubeconfig: pulumi.Output<string>;

  constructor(name: string, args: Rke2ClusterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:rke2:Cluster", name, {}, opts);
    const { cluster, servers } = args;
    if (servers.length === 0)
      throw new pulumi.ResourceError(`cluster ${cluster.name} has no server to start.`, this);
    const missingSan = registrationAddressMissingFromTlsSan(cluster);
    if (missingSan !== undefined) {
      throw new pulumi.ResourceError(
        `tls-san of ${cluster.name} lacks its registration address ${missingSan}; joining servers and agents could not verify the servers' certificate.`,
        this,
      );
    }
    const token = pulumi.secret(args.token);
    const startScript = scriptRef(__dirname, "rke2-start.sh");
    const gateScript = scriptRef(__dirname, "join-gate.sh");
    const membersScript = scriptRef(__dirname, "etcd-members.sh");
    const factsScript = scriptRef(__dirname, "rke2-facts.sh");
    const drainScript = args.drain && scriptRef(__dirname, "drain-node.sh");
    const [first] = servers;
    let previousGate: pulumi.Resource | undefined;
    let firstStart: NodeStartResource | undefined;
    const pending: pulumi.Output<string[]>[] = [];
    // The managed registries.yaml entries with their credentials (secret), and their plain view.
    const wantedRegistries = args.registries;
    const registries =
      wantedRegistries &&
      pulumi.secret(
        pulumi
          .output(wantedRegistries.auth)
          .apply((auth) => JSON.stringify({ spec: wantedRegistries.spec, auth })),
      );
    const managedRegistries =
      registries &&
      pulumi.unsecret(registries.apply((text) => desiredRegistryEntries(JSON.parse(text))));

    // RKE2 on one node: config.yaml adopted, installed, started or restarted as its facts and
    // the stack require. The rendered keys carry the token, so they stay a secret; their
    // token-free view is plain, for diffs that name each key.
    const nodeStart = (
      node: NodeSpec,
      role: "server" | "agent",
      render: (token: string) => string,
      after: pulumi.Resource[],
      serverInputs: Pick<NodeStartInputs, "joinsThrough" | "peers"> = {},
    ) => {
      const config = token.apply(render);
      const managedKeys = pulumi.unsecret(config.apply(desiredManagedKeys));
      const start = new NodeStartResource(
        "nodeStart",
        RKE2_NODE_START,
        `${name}-start-${node.name}`,
        { ssh: node.ssh, sshPrivateKey: args.sshPrivateKey, script: startScript },
        {
          node: node.name,
          nodeIp: node.ip,
          role,
          factsScript,
          membersScript,
          version: cluster.version,
          installCommand: args.installCommand,
          ...(args.artifacts ? { artifacts: args.artifacts } : {}),
          // Drained through the first server; its data-dir once its own step found it.
          ...(args.drain && drainScript
            ? {
                drain: {
                  script: drainScript,
                  ...args.drain,
                  through: {
                    ...serverRef(first),
                    ...(firstStart ? { dataDir: firstStart.dataDir } : {}),
                  },
                },
              }
            : {}),
          config,
          managedKeys,
          ...(registries ? { registries, managedRegistries } : {}),
          ...serverInputs,
          // Outputs the step reports: the SDK makes an output only for a declared prop.
          startedAt: undefined,
          dataDir: undefined,
          installedVersion: undefined,
          restartPending: undefined,
        },
        {
          parent: this,
          dependsOn: after,
          additionalSecretOutputs: registries ? ["config", "registries"] : ["config"],
        },
      );
      pending.push(
        pulumi
          .all([
            start.managedKeys,
            start.installedVersion,
            start.restartPending,
            managedKeys,
            registries ? start.managedRegistries : undefined,
            managedRegistries,
          ])
          .apply(([found, installed, owed, wanted, foundEntries, wantedEntries]) => {
            const differs = (
              has: Record<string, string> | undefined,
              want = {} as Record<string, string>,
            ) => Object.keys(want).some((k) => has?.[k] !== want[k]);
            return differs(found, wanted) ||
              differs(foundEntries, wantedEntries) ||
              installed !== cluster.version ||
              !!owed
              ? [node.name]
              : [];
          }),
      );
      return start;
    };

    const serverRender = (node: NodeSpec, i: number) => (t: string) =>
      renderRke2ServerConfig({
        cluster,
        node,
        joinAddress: i === 0 ? undefined : registrationAddressOf(cluster, first),
        token: t,
        kubeletArgs: args.kubeletArgs,
      });
    // What the first server checks on the others before it changes anything (no token: plain).
    const peers = servers.slice(1).map((node, j) => ({
      ...serverRef(node),
      config: withoutToken(serverRender(node, j + 1)("")),
    }));
    for (const [i, node] of servers.entries()) {
      const waitFor = args.serverJoin === "sequential" && previousGate ? [previousGate] : [];
      const after = [...(args.prerequisites.get(node.name) ?? []), ...waitFor];
      const start = nodeStart(node, "server", serverRender(node, i), after, {
        joinsThrough: i === 0 ? undefined : serverRef(first),
        peers: i === 0 ? peers : undefined,
      });
      firstStart ??= start;
      previousGate = new HostStepResource(
        "joinGate",
        RKE2_JOIN_GATE,
        `${name}-gate-${node.name}`,
        { ssh: node.ssh, sshPrivateKey: args.sshPrivateKey, script: gateScript },
        {
          node: node.name,
          membersScript,
          timeoutSeconds: args.gateTimeoutSeconds,
          pollSeconds: args.gatePollSeconds,
          dataDir: start.dataDir,
          serverStartedAt: start.startedAt,
          // A joining server's etcd must answer for the first server's cluster.
          firstServer: i === 0 ? undefined : { ...serverRef(first), dataDir: firstStart.dataDir },
        },
        { parent: this, dependsOn: [start] },
      );
      this.gates.push(previousGate);
    }

    // Agents restart at most agentsMaxUnavailable at a time: each waits for the step of the agent
    // that many places before it.
    const agentStarts: NodeStartResource[] = [];
    for (const [i, node] of args.agents.entries()) {
      const earlier = agentStarts[i - args.agentsMaxUnavailable];
      const after = [
        ...(args.prerequisites.get(node.name) ?? []),
        previousGate!,
        ...(earlier ? [earlier] : []),
      ];
      const render = (t: string) =>
        renderRke2AgentConfig({
          cluster,
          node,
          serverAddress: registrationAddressOf(cluster, first),
          token: t,
          kubeletArgs: args.kubeletArgs,
        });
      agentStarts.push(nodeStart(node, "agent", render, after));
    }
    // Read once the first server's gate passed: RKE2 wrote the file when that server started.
    const kubeconfig = new KubeconfigResource(
      "kubeconfig",
      RKE2_KUBECONFIG,
      `${name}-kubeconfig`,
      {
        ssh: first.ssh,
        sshPrivateKey: args.sshPrivateKey,
        script: scriptRef(__dirname, "read-kubeconfig.sh"),
      },
      { node: first.name, apiHost: registrationAddressOf(cluster, first), kubeconfig: undefined },
      { parent: this, dependsOn: [this.gates[0]], additionalSecretOutputs: ["kubeconfig"] },
    );
    this.kubeconfig = pulumi.secret(kubeconfig.kubeconfig);
    const listed = (node: NodeSpec): Rke2ClusterNode => ({ name: node.name, ip: node.ip });
    this.version = pulumi.output(cluster.version);
    this.servers = pulumi.output(servers.map(listed));
    this.agents = pulumi.output(args.agents.map(listed));
    this.registrationUrl = pulumi.output(supervisorUrl(registrationAddressOf(cluster, first)));
    this.nodesPendingRestart = pulumi.all(pending).apply((lists) => lists.flat());
    this.registerOutputs({
      version: this.version,
      servers: this.servers,
      agents: this.agents,
      registrationUrl: this.registrationUrl,
      nodesPendingRestart: this.nodesPendingRestart,
      kubeconfig: this.kubeconfig,
    });
  }
}
