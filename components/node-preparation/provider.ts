/**
 * Dynamic provider for node preparation over SSH. Inputs state the desired facts; `read` reports
 * the observed ones under the same names, so a refresh after someone re-enabled iptables.service
 * shows `firewallServicesDisabled: false` against the desired `true`.
 * Runs in Pulumi's dynamic-provider process; see ../libvirt-dns/provider.ts for the constraints.
 */
import * as pulumi from "@pulumi/pulumi";
import type { SshEndpoint } from "../model";
import * as ssh from "../ssh/run-script";
import * as facts from "./render";

export interface NodePreparationState {
  readonly node: string;
  readonly connection: SshEndpoint;
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  readonly script: string;
  readonly bringUpKubeIpvs: boolean;
  /** iptables, ip6tables and (unless kept) firewalld services not enabled. */
  readonly firewallServicesDisabled: boolean;
  /** nodePreparation.firewalld is keep: firewalld is left as found. Older state has none. */
  readonly keepFirewalld?: boolean;
  /** nm-cloud-setup's service and timer neither enabled nor running. */
  readonly nmCloudSetupDisabled: boolean;
  /** firewalld running as found; it stays running when stopping it would flush other rules. */
  readonly firewalldRunning?: boolean;
  /**
   * The last apply changed the NetworkManager drop-in on a node that already has RKE2
   * (rancher/rke2-docs@9477b7b1:docs/known_issues.md: reboot the node). Never acted on here.
   */
  readonly rebootRequired?: boolean;
  /**
   * No Rocky REJECT rule in INPUT or FORWARD (IPv4 and IPv6); with firewalld kept and running,
   * true as found: such a rule may be firewalld's own, and is left to its operators.
   */
  readonly rejectRulesAbsent: boolean;
  /**
   * 99-rke2-unmanaged.conf: on input as the stack renders it, on output as found. The host's
   * file is merged with the stack's: the operator's entries stay, the stack's missing ones are
   * added, so the two texts may differ while the found file lists every device of the stack's.
   */
  readonly networkManagerConfig: string;
  /** Earlier conf files setting unmanaged-devices that the host's drop-in replaces (`=`). */
  readonly networkManagerReplaces?: readonly string[];
  /** kube-ipvs0 state as found: up, down or absent. */
  readonly kubeIpvs0?: string;
  /** What the last apply changed, line by line. */
  readonly lastChanges?: readonly string[];
  /** The node's address in the stack; the host must have it. */
  readonly nodeIp?: string;
  /** As found: what makes the host unfit for the stack's node (empty when nothing does). */
  readonly hostFindings?: readonly string[];
  /** RKE2's `profile` for the node (./profile.ts), recorded only when the stack sets one. */
  readonly rke2Profile?: string;
  /** The node runs `rke2 server`: with a profile, the etcd user and group must exist. */
  readonly etcdUser?: boolean;
  /** As found: what the host lacks for that profile (empty when nothing). */
  readonly profileFindings?: readonly string[];
}

/** `applied` is set after an apply; a read keeps what the last apply reported. */
function observed(
  state: NodePreparationState,
  f: facts.NodeFacts,
  applied?: { changes: string[] },
): NodePreparationState {
  return {
    ...state,
    firewallServicesDisabled: [
      f.iptablesService,
      f.ip6tablesService,
      ...(state.keepFirewalld === true ? [] : [f.firewalldService]),
    ].every((s) => s !== "enabled"),
    nmCloudSetupDisabled:
      f.nmCloudSetupService !== "enabled" &&
      f.nmCloudSetupTimer !== "enabled" &&
      !f.nmCloudSetupActive,
    firewalldRunning: f.firewalldActive,
    rejectRulesAbsent: f.rejectRules === 0 || (state.keepFirewalld === true && f.firewalldActive),
    networkManagerConfig: f.networkManagerConfig,
    networkManagerReplaces: f.networkManagerReplaces,
    kubeIpvs0: f.kubeIpvs0,
    rebootRequired: f.rebootRequired,
    hostFindings: f.hostFindings,
    ...(state.rke2Profile === undefined ? {} : { profileFindings: f.profileFindings ?? [] }),
    lastChanges: applied?.changes ?? state.lastChanges ?? [],
  };
}

async function runNodeScript(state: NodePreparationState, action: "read" | "apply") {
  // The script's lines are logged together once it ends (or fails): one message for its
  // "warning: " lines (reboot needed, firewalld left running), one for the rest. The step takes
  // about a second, and each message is a round through Pulumi's engine and display, which on
  // an estate of many nodes costs more than the step's own work.
  const lines: string[] = [];
  const flush = () => {
    const warning = `node ${state.node}: warning: `;
    const warnings = lines.filter((l) => l.startsWith(warning));
    const info = lines.filter((l) => !l.startsWith(warning));
    if (info.length > 0) void pulumi.log.info(info.join("\n"));
    if (warnings.length > 0) void pulumi.log.warn(warnings.join("\n"));
  };
  let result: ssh.ScriptResult;
  try {
    result = await ssh.runHostScript(state.connection, state, state.script, {
      label: `node ${state.node}`,
      params: facts.nodeScriptParams(action, state),
      timeoutMs: 120000,
      log: (line) => lines.push(line),
    });
  } finally {
    flush();
  }
  return { facts: facts.parseNodeFacts(result.stdout), changes: ssh.changedLines(result) };
}

/**
 * What the host's NetworkManager drop-in lacks against the stack's: "networkManagerConfig" when
 * it misses a device of the stack's or replaces an earlier file's entries, else nothing.
 */
function networkManagerOff(found: NodePreparationState, desired: NodePreparationState): string[] {
  const missing = facts.missingDeviceSpecs(
    found.networkManagerConfig,
    desired.networkManagerConfig,
  );
  return missing.length > 0 || (found.networkManagerReplaces ?? []).length > 0
    ? ["networkManagerConfig"]
    : [];
}

/** After an apply, a fact still off means the host refused a change: fail, naming it. */
function assertConverged(
  desired: NodePreparationState,
  found: NodePreparationState,
): NodePreparationState {
  const off = [
    ...CONVERGENT.filter((k) => found[k] !== desired[k]),
    ...networkManagerOff(found, desired),
    ...(found.profileFindings ?? []).map((f) => `profile ${desired.rke2Profile}: ${f}`),
  ];
  if (off.length > 0) {
    throw new Error(
      `node ${desired.node}: preparation did not converge (${off.join(", ")} still differ); ` +
        "see the node's systemctl and iptables state, fix what refused the change, and re-run.",
    );
  }
  return found;
}

const CONVERGENT = [
  "firewallServicesDisabled",
  "nmCloudSetupDisabled",
  "rejectRulesAbsent",
] as const;

export const nodePreparationProvider: pulumi.dynamic.ResourceProvider = {
  async diff(
    _id: string,
    olds: NodePreparationState,
    news: NodePreparationState,
  ): Promise<pulumi.dynamic.DiffResult> {
    const drifted = [
      ...CONVERGENT.filter((k) => olds[k] !== news[k]),
      ...networkManagerOff(olds, news),
    ];
    const kubeIpvsDrift = news.bringUpKubeIpvs && olds.kubeIpvs0 === "down";
    // A reboot the host still owes stays a difference until it happened, so a drift check
    // (preview --refresh --expect-no-changes) keeps failing on it.
    const rebootOwed = olds.rebootRequired === true;
    const hostUnfit = (olds.hostFindings ?? []).length > 0;
    // RKE2's profile: the host lacks a kernel parameter, the etcd user or its group.
    const profileUnmet = news.rke2Profile !== undefined && (olds.profileFindings ?? []).length > 0;
    const other = ssh.inputsDiffer(olds, news, [
      "script",
      "bringUpKubeIpvs",
      "keepFirewalld",
      "rke2Profile",
      "etcdUser",
      "sshKeyFingerprint",
      "connection",
    ]);
    const replaces = olds.connection.host !== news.connection.host ? ["connection"] : [];
    const changes =
      drifted.length > 0 || kubeIpvsDrift || rebootOwed || hostUnfit || profileUnmet || other;
    // Said in the preview, before the host firewall goes: the state (refreshed or adopted) shows
    // firewalld running there, and the apply would disable it.
    if (changes && olds.firewalldRunning === true && news.keepFirewalld !== true) {
      void pulumi.log.warn(
        `node ${news.node}: firewalld.service runs there; up disables it and stops it where its ` +
          "stop flushes no other rules (nodePreparation.firewalld is disable). Set it to keep to " +
          "keep firewalld, with RKE2's and the CNI's ports open in its zones.",
      );
    }
    return {
      changes,
      replaces,
      deleteBeforeReplace: false,
    };
  },

  async create(inputs: NodePreparationState): Promise<pulumi.dynamic.CreateResult> {
    const { facts: f, changes } = await runNodeScript(inputs, "apply");
    return {
      id: `${inputs.node}/node-preparation`,
      outs: assertConverged(inputs, observed(inputs, f, { changes })),
    };
  },

  async read(id: string, props: NodePreparationState): Promise<pulumi.dynamic.ReadResult> {
    const { facts: f } = await runNodeScript(props, "read");
    return { id, props: observed(props, f) };
  },

  async update(
    _id: string,
    _olds: NodePreparationState,
    news: NodePreparationState,
  ): Promise<pulumi.dynamic.UpdateResult> {
    const { facts: f, changes } = await runNodeScript(news, "apply");
    return { outs: assertConverged(news, observed(news, f, { changes })) };
  },

  // Deleting leaves the host as it is: re-enabling iptables.service would re-break it (seed 003).
  async delete(): Promise<void> {},
};
