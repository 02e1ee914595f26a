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
  readonly nmCloudSetupService: UnitState;
  readonly nmCloudSetupTimer: UnitState;
  readonly rejectRules: number;
  readonly networkManagerConfig: string;
  readonly kubeIpvs0: "up" | "down" | "absent";
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
  return {
    iptablesService: get("iptables_service") as UnitState,
    ip6tablesService: get("ip6tables_service") as UnitState,
    firewalldService: get("firewalld_service") as UnitState,
    nmCloudSetupService: get("nm_cloud_setup_service") as UnitState,
    nmCloudSetupTimer: get("nm_cloud_setup_timer") as UnitState,
    rejectRules: Number(get("reject_rules")),
    networkManagerConfig: Buffer.from(get("nm_config_b64"), "base64").toString("utf8"),
    kubeIpvs0: get("kube_ipvs0") as NodeFacts["kubeIpvs0"],
  };
}
