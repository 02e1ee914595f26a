/**
 * What is wrong with an unmanaged-devices list, each problem with the index of its entry (or
 * undefined for the list as a whole); empty when it is fit. The stack config's validator and
 * NodePreparation both check a list with it.
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

/** NetworkManager keyfile config that keeps kube-ipvs0 and the CNI's devices unmanaged (seed 003). */
export function renderUnmanagedDevicesConfig(devices: readonly string[]): string {
  return [
    "[keyfile]",
    `unmanaged-devices=${devices.map((d) => `interface-name:${d}`).join(";")}`,
  ].join("\n");
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
  readonly networkManagerConfig: string;
  readonly kubeIpvs0: "up" | "down" | "absent";
  /** An rke2-server or rke2-agent unit is installed or running on the node. */
  readonly rke2Installed: boolean;
  /** NetworkManager's drop-in changed on a node that already had RKE2, and it has not booted since. */
  readonly rebootRequired: boolean;
  /** What makes the host unfit for the stack's node (its address, memory, CPUs, resolver). */
  readonly hostFindings: readonly string[];
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
    kubeIpvs0: get("kube_ipvs0") as NodeFacts["kubeIpvs0"],
    rke2Installed: flag("rke2_installed"),
    rebootRequired: flag("reboot_required"),
    hostFindings: get("host_findings").split(";").filter(Boolean),
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
  },
): Record<string, string> {
  return {
    ACTION: action,
    NM_CONFIG: state.networkManagerConfig,
    BRING_UP_KUBE_IPVS: String(state.bringUpKubeIpvs),
    NODE_IP: state.nodeIp ?? "",
    MIN_MEMORY_MIB: String(RKE2_MINIMUMS.memoryMiB),
    MIN_CPUS: String(RKE2_MINIMUMS.cpus),
  };
}
