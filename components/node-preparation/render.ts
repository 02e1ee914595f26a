import { cisSysctlText } from "./profile";

/**
 * What is wrong with an unmanaged-devices list, each problem with the index of its entry (or
 * undefined for the list as a whole); empty when it is fit. The stack config's validator and
 * NodePreparations both check a list with it.
 */
export function unmanagedDevicesProblems(
  devices: readonly string[],
): { readonly index?: number; readonly message: string }[] {
  const problems: { index?: number; message: string }[] = [];
  devices.forEach((d, index) => {
    // An interface name is at most 15 characters (IFNAMSIZ less its terminator).
    if (!/^[A-Za-z0-9._*-]{1,15}$/.test(d)) {
      problems.push({ index, message: `"${d}" is not an interface name pattern.` });
    }
  });
  if (!devices.includes("kube-ipvs0")) {
    problems.push({
      message:
        "must include kube-ipvs0; NetworkManager managing it is what took ClusterIPs down in seed 003.",
    });
  }
  return problems;
}

/**
 * NetworkManager keyfile config that keeps kube-ipvs0 and the CNI's devices unmanaged (seed 003).
 * `+=` appends to what earlier files set (NetworkManager.conf(5): a later `key=` replaces the
 * value, `key+=` appends to it), so an operator's own earlier entries keep their effect.
 */
export function renderUnmanagedDevicesConfig(devices: readonly string[]): string {
  return [
    "[keyfile]",
    `unmanaged-devices+=${devices.map((d) => `interface-name:${d}`).join(";")}`,
  ].join("\n");
}

/**
 * The unmanaged-devices specs one keyfile config leaves in force: its `[keyfile]` lines in order,
 * `unmanaged-devices=` replacing and `unmanaged-devices+=` appending (as prepare-node.sh reads the
 * file on the host).
 */
export function unmanagedDeviceSpecs(config: string): string[] {
  let specs: string[] = [];
  let section = "";
  for (const raw of config.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("[")) {
      section = line.replace(/\s/g, "");
      continue;
    }
    const m = /^unmanaged-devices\s*(\+?)=\s*(.*)$/.exec(line);
    if (section !== "[keyfile]" || !m) continue;
    const more = m[2].split(";").filter(Boolean);
    specs = m[1] === "+" ? [...specs, ...more] : more;
  }
  return specs;
}

/** The specs `desired` lists that the config `found` does not leave in force. */
export function missingDeviceSpecs(found: string, desired: string): string[] {
  const have = new Set(unmanagedDeviceSpecs(found));
  return unmanagedDeviceSpecs(desired).filter((s) => !have.has(s));
}

/** What the node script reports, parsed from its key=value lines. */
export interface NodeFacts {
  readonly iptablesService: UnitState;
  readonly ip6tablesService: UnitState;
  readonly firewalldService: UnitState;
  /** firewalld still running (left so when stopping it would flush other rules). */
  readonly firewalldActive: boolean;
  readonly nmCloudSetupService: UnitState;
  readonly nmCloudSetupTimer: UnitState;
  /** nm-cloud-setup's service or timer running. */
  readonly nmCloudSetupActive: boolean;
  readonly rejectRules: number;
  /** The drop-in as found (empty when absent). */
  readonly networkManagerConfig: string;
  /** Earlier conf files setting unmanaged-devices that the drop-in's `=` replaces. */
  readonly networkManagerReplaces: readonly string[];
  readonly kubeIpvs0: "up" | "down" | "absent";
  /** An rke2-server or rke2-agent unit is installed or running on the node. */
  readonly rke2Installed: boolean;
  /**
   * NetworkManager's drop-in changed on a node that already had RKE2, adding a device that
   * exists, and it has not booted since.
   */
  readonly rebootRequired: boolean;
  /** What makes the host unfit for the stack's node (its address, memory, CPUs, resolver). */
  readonly hostFindings: readonly string[];
  /** What the host lacks for RKE2's `profile` (kernel parameters, the etcd user and group);
   * reported only when the script was given a profile. */
  readonly profileFindings?: readonly string[];
}

export type UnitState = "enabled" | "disabled" | "absent";

export function parseNodeFacts(stdout: string): NodeFacts {
  const kv = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) kv.set(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  const get = (k: string): string => {
    const v = kv.get(k);
    if (v === undefined)
      throw new Error(`node script output lacks ${k}; is the script from this version?`);
    return v;
  };
  const flag = (k: string): boolean => {
    const v = get(k);
    if (v !== "true" && v !== "false")
      throw new Error(`node script reported ${k}=${v}; expected true or false.`);
    return v === "true";
  };
  return {
    iptablesService: get("iptables_service") as UnitState,
    ip6tablesService: get("ip6tables_service") as UnitState,
    firewalldService: get("firewalld_service") as UnitState,
    firewalldActive: flag("firewalld_active"),
    nmCloudSetupService: get("nm_cloud_setup_service") as UnitState,
    nmCloudSetupTimer: get("nm_cloud_setup_timer") as UnitState,
    nmCloudSetupActive: flag("nm_cloud_setup_active"),
    rejectRules: Number(get("reject_rules")),
    networkManagerConfig: Buffer.from(get("nm_config_b64"), "base64").toString("utf8"),
    networkManagerReplaces: get("nm_replaces").split(" ").filter(Boolean),
    kubeIpvs0: get("kube_ipvs0") as NodeFacts["kubeIpvs0"],
    rke2Installed: flag("rke2_installed"),
    rebootRequired: flag("reboot_required"),
    hostFindings: get("host_findings").split(";").filter(Boolean),
    ...(kv.has("profile_findings")
      ? { profileFindings: kv.get("profile_findings")!.split(";").filter(Boolean) }
      : {}),
  };
}

/**
 * RKE2's minimum per node: "RAM: 4GB Minimum", "CPU: 2 Minimum"
 * (rancher/rke2-docs@9477b7b1:docs/install/requirements.md, Hardware). MemTotal leaves out what
 * the kernel reserves, so a 4 GiB VM reports about 3.8 GiB: 3.5 GiB is taken as 4 GB.
 */
export const RKE2_MINIMUMS = { memoryMiB: 3584, cpus: 2 } as const;

/** Parameters of prepare-node.sh; `render` writes the same script for review. */
export function nodeScriptParams(
  action: "read" | "apply",
  state: {
    readonly networkManagerConfig: string;
    readonly bringUpKubeIpvs: boolean;
    readonly nodeIp?: string;
    readonly keepFirewalld?: boolean;
    readonly rke2Profile?: string;
    readonly etcdUser?: boolean;
  },
): Record<string, string> {
  return {
    ACTION: action,
    NM_CONFIG: state.networkManagerConfig,
    BRING_UP_KUBE_IPVS: String(state.bringUpKubeIpvs),
    NODE_IP: state.nodeIp ?? "",
    KEEP_FIREWALLD: String(state.keepFirewalld === true),
    MIN_MEMORY_MIB: String(RKE2_MINIMUMS.memoryMiB),
    MIN_CPUS: String(RKE2_MINIMUMS.cpus),
    // Given only with a profile, so the script of a node without one is as before.
    ...(state.rke2Profile === undefined
      ? {}
      : {
          PROFILE: state.rke2Profile,
          CIS_SYSCTL: state.rke2Profile === "cis" ? cisSysctlText() : "",
          ETCD_USER: String(state.etcdUser === true),
        }),
  };
}
