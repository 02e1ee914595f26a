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

/** The nodes whose last preparation asked for a reboot, in the order given. */
export function nodesRequiringReboot(
  preparations: readonly NodePreparation[],
): pulumi.Output<string[]> {
  return pulumi.all(preparations.map((p) => p.nodesRequiringReboot)).apply((lists) => lists.flat());
}

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

/** The dynamic resource behind the component; its outputs are the provider's state. */
class NodePreparationResource extends HostStepResource {
  declare readonly firewallServicesDisabled: pulumi.Output<boolean>;
  declare readonly rejectRulesAbsent: pulumi.Output<boolean>;
  declare readonly firewalldRunning: pulumi.Output<boolean | undefined>;
  declare readonly rebootRequired: pulumi.Output<boolean | undefined>;
  declare readonly lastChanges: pulumi.Output<string[] | undefined>;
}

/**
 * Prepares one node for RKE2 (seed 003): iptables/ip6tables services disabled (never stopped),
 * firewalld disabled and stopped when its stop leaves other rules alone, Rocky's REJECT rules
 * removed and every other rule kept, nm-cloud-setup's timer and service disabled and stopped,
 * NetworkManager told to leave kube-ipvs0 and CNI devices alone. When that NetworkManager change
 * lands on a node that already has RKE2, it reports `rebootRequired` and logs a warning; it never
 * reboots. Deleting it changes nothing on the host.
 */
export class NodePreparation extends pulumi.ComponentResource {
  /** True once the node's firewall services are disabled and its REJECT rules gone. */
  public readonly firewallReady: pulumi.Output<boolean>;
  /** What the last apply changed on the host. */
  public readonly lastChanges: pulumi.Output<string[]>;
  /**
   * True when the last apply changed NetworkManager's unmanaged devices on a node that already
   * has RKE2: reboot the node (rancher/rke2-docs@9477b7b1:docs/known_issues.md). Never done here.
   */
  public readonly rebootRequired: pulumi.Output<boolean>;
  /** The node's name when `rebootRequired`, else empty: concatenate these for a stack's list. */
  public readonly nodesRequiringReboot: pulumi.Output<string[]>;
  /** firewalld still runs (disabled; left running because stopping it would flush other rules). */
  public readonly firewalldRunning: pulumi.Output<boolean>;

  constructor(name: string, args: NodePreparationArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:node:Preparation", name, {}, opts);
    const { node } = args;
    // The same defaults and checks as the stack config's nodePreparation and cluster keys.
    const unmanagedDevices = args.unmanagedDevices ?? DEFAULT_UNMANAGED_DEVICES;
    const problems = unmanagedDevicesProblems(unmanagedDevices).map(
      (p) => `unmanagedDevices${p.index === undefined ? "" : `[${p.index}]`} ${p.message}`,
    );
    if (problems.length > 0) {
      throw new pulumi.ResourceError(`node ${node.name}: ${problems.join(" ")}`, this);
    }
    const resource = new NodePreparationResource(
      "nodePreparation",
      NODE_PREPARATION,
      `${name}-host`,
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
      { parent: this },
    );
    this.firewallReady = pulumi
      .all([resource.firewallServicesDisabled, resource.rejectRulesAbsent])
      .apply(([a, b]) => a && b);
    this.lastChanges = resource.lastChanges.apply((c) => c ?? []);
    this.rebootRequired = resource.rebootRequired.apply((r) => r === true);
    this.nodesRequiringReboot = this.rebootRequired.apply((r) => (r ? [node.name] : []));
    this.firewalldRunning = resource.firewalldRunning.apply((r) => r === true);
    this.registerOutputs({
      firewallReady: this.firewallReady,
      lastChanges: this.lastChanges,
      rebootRequired: this.rebootRequired,
      nodesRequiringReboot: this.nodesRequiringReboot,
      firewalldRunning: this.firewalldRunning,
    });
  }
}
