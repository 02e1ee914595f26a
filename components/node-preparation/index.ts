import * as pulumi from "@pulumi/pulumi";
import {
  Cni,
  DEFAULT_CNI,
  DEFAULT_KUBE_PROXY_MODE,
  DEFAULT_UNMANAGED_DEVICES,
  KubeProxyMode,
  NODE_PREPARATION,
  NodeSpec,
} from "../model";
import { scriptRef } from "../assets";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";
import { renderUnmanagedDevicesConfig, unmanagedDevicesProblems } from "./render";
import { Rke2Profile } from "./profile";
import { runsRke2Server } from "./ports";

export { renderUnmanagedDevicesConfig, parseNodeFacts, unmanagedDevicesProblems } from "./render";
export { runsRke2Server, tcpPortsToPeer } from "./ports";
export { knownProfile, profileSettingOf } from "./profile";
export {
  NodePortsPreflight,
  ServerPortsPreflight,
  RKE2_SERVER_PORTS,
  parsePortChecks,
  blockedChecks,
} from "./preflight";

export interface NodePreparationArgs {
  /** The node, with its SSH endpoint and pinned host key. */
  readonly node: NodeSpec;
  /**
   * Private key for the SSH user; a Pulumi secret. The provider connects with the stack's
   * `sshPrivateKey` config secret, which must be this key.
   */
  readonly sshPrivateKey: SshKey;
  /**
   * NetworkManager `unmanaged-devices` interface-name patterns; must include kube-ipvs0.
   * Default: DEFAULT_UNMANAGED_DEVICES (kube-ipvs0 and the Calico, flannel and WireGuard devices).
   */
  readonly unmanagedDevices?: readonly string[];
  /** Set kube-ipvs0 up. Default false: kube-proxy keeps it DOWN by design. */
  readonly bringUpKubeIpvs?: boolean;
  /**
   * Leave firewalld as found (nodePreparation.firewalld: keep), and while it runs the REJECT
   * rules too. Default false: disabled, and stopped where that flushes nothing else.
   */
  readonly keepFirewalld?: boolean;
  /** The CNI of the node's cluster, recorded so policies can check the unmanaged list. Default calico. */
  readonly cni?: Cni;
  /** kube-proxy mode of the node's cluster, recorded for the same reason. Default iptables. */
  readonly kubeProxyMode?: KubeProxyMode;
  /**
   * RKE2's `profile` on the node (cis or etcd): the host steps it requires are done before RKE2
   * starts (./profile.ts). Default none.
   */
  readonly rke2Profile?: Rke2Profile;
}

/** A node's host step; its outputs are the provider's state. */
class NodePreparationResource extends HostStepResource {
  declare readonly firewallServicesDisabled: pulumi.Output<boolean>;
  declare readonly rejectRulesAbsent: pulumi.Output<boolean>;
  declare readonly firewalldRunning: pulumi.Output<boolean | undefined>;
  declare readonly rebootRequired: pulumi.Output<boolean | undefined>;
  declare readonly lastChanges: pulumi.Output<string[] | undefined>;
}

/** One node's preparation: its host step, which later steps on the node wait for, and its report. */
export interface PreparedNode {
  /** The host step; a step that needs the node prepared lists it in `dependsOn`. */
  readonly step: pulumi.CustomResource;
  /** True once the node's firewall services are disabled and its REJECT rules gone. */
  readonly firewallReady: pulumi.Output<boolean>;
  /** What the last apply changed on the host. */
  readonly lastChanges: pulumi.Output<string[]>;
  /**
   * True when the last apply changed NetworkManager's unmanaged devices on a node that already
   * has RKE2: reboot the node (rancher/rke2-docs@9477b7b1:docs/known_issues.md). Never done here.
   */
  readonly rebootRequired: pulumi.Output<boolean>;
  /** firewalld still runs (disabled; left running because stopping it would flush other rules). */
  readonly firewalldRunning: pulumi.Output<boolean>;
}

export interface NodePreparationsArgs {
  /** The nodes to prepare, each with its settings; node names are unique. */
  readonly nodes: readonly NodePreparationArgs[];
}

/** The type of the per-node component that held each host step before `NodePreparations`. */
const PER_NODE_COMPONENT = "rke2remediation:node:Preparation";

/**
 * Prepares nodes for RKE2 (seed 003): iptables/ip6tables services disabled (never stopped),
 * firewalld disabled and stopped when its stop leaves other rules alone, Rocky's REJECT rules
 * removed and every other rule kept, nm-cloud-setup's timer and service disabled and stopped,
 * NetworkManager told to leave kube-ipvs0 and CNI devices alone. When that NetworkManager change
 * lands on a node that already has RKE2, the node reports `rebootRequired` and a warning is
 * logged; nothing reboots. Deleting it changes nothing on the hosts.
 *
 * One component holds one host step per node, named `<name>-<node>-host`. Each step used to sit
 * under a component of its own (`rke2remediation:node:Preparation` named `<name>-<node>`); the
 * step's alias to that parent lets state written then keep its steps, and the next `pulumi up`
 * only deletes those empty components from the state. Pulumi spends about as much per resource
 * on a component as on a host step (docs/benchmarks.md), so a node costs one resource, not two.
 */
export class NodePreparations extends pulumi.ComponentResource {
  /** Each node's preparation, by node name, in the order given. */
  public readonly byNode: ReadonlyMap<string, PreparedNode>;
  /** The nodes whose last apply asks for a reboot, in the order given. */
  public readonly nodesRequiringReboot: pulumi.Output<string[]>;

  constructor(name: string, args: NodePreparationsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:node:Preparations", name, {}, opts);
    const byNode = new Map<string, PreparedNode>();
    for (const nodeArgs of args.nodes) {
      const { node } = nodeArgs;
      if (byNode.has(node.name)) {
        throw new pulumi.ResourceError(`node ${node.name} is listed twice`, this);
      }
      const perNodeComponent = pulumi.createUrn(
        `${name}-${node.name}`,
        PER_NODE_COMPONENT,
        opts?.parent,
      );
      byNode.set(
        node.name,
        prepareNode(`${name}-${node.name}-host`, nodeArgs, this, perNodeComponent),
      );
    }
    this.byNode = byNode;
    this.nodesRequiringReboot = pulumi
      .all([...byNode].map(([node, p]) => p.rebootRequired.apply((r) => (r ? [node] : []))))
      .apply((lists) => lists.flat());
    this.registerOutputs({ nodesRequiringReboot: this.nodesRequiringReboot });
  }
}

/** Declares one node's host step under `parent`, aliased to the per-node component it had. */
function prepareNode(
  name: string,
  args: NodePreparationArgs,
  parent: pulumi.Resource,
  formerParent: pulumi.Output<string>,
): PreparedNode {
  const { node } = args;
  // The same defaults and checks as the stack config's nodePreparation and cluster keys.
  const unmanagedDevices = args.unmanagedDevices ?? DEFAULT_UNMANAGED_DEVICES;
  const problems = unmanagedDevicesProblems(unmanagedDevices).map(
    (p) => `unmanagedDevices${p.index === undefined ? "" : `[${p.index}]`} ${p.message}`,
  );
  if (problems.length > 0) {
    throw new pulumi.ResourceError(`node ${node.name}: ${problems.join(" ")}`, parent);
  }
  const step = new NodePreparationResource(
    "nodePreparation",
    NODE_PREPARATION,
    name,
    {
      ssh: node.ssh,
      sshPrivateKey: args.sshPrivateKey,
      script: scriptRef(__dirname, "prepare-node.sh"),
    },
    {
      node: node.name,
      // The host must have this address (checked before any change); the rest are facts
      // about the node for policies.
      nodeIp: node.ip,
      cluster: node.cluster,
      roles: [...node.roles],
      cni: args.cni ?? DEFAULT_CNI,
      kubeProxyMode: args.kubeProxyMode ?? DEFAULT_KUBE_PROXY_MODE,
      bringUpKubeIpvs: args.bringUpKubeIpvs ?? false,
      // Recorded only when set, so state written before the key holds the same inputs.
      ...(args.keepFirewalld === true ? { keepFirewalld: true } : {}),
      ...(args.rke2Profile === undefined
        ? {}
        : {
            rke2Profile: args.rke2Profile,
            etcdUser: runsRke2Server(node.roles),
            profileFindings: undefined,
          }),
      firewallServicesDisabled: true,
      nmCloudSetupDisabled: true,
      rejectRulesAbsent: true,
      networkManagerConfig: renderUnmanagedDevicesConfig(unmanagedDevices),
      kubeIpvs0: undefined,
      firewalldRunning: undefined,
      rebootRequired: undefined,
      lastChanges: undefined,
      hostFindings: undefined,
    },
    { parent, aliases: [{ parent: formerParent }] },
  );
  return {
    step,
    firewallReady: pulumi
      .all([step.firewallServicesDisabled, step.rejectRulesAbsent])
      .apply(([a, b]) => a && b),
    lastChanges: step.lastChanges.apply((c) => c ?? []),
    rebootRequired: step.rebootRequired.apply((r) => r === true),
    firewalldRunning: step.firewalldRunning.apply((r) => r === true),
  };
}
