import { ResourceValidationPolicy } from "@pulumi/policy";
import { NODE_PREPARATION_TYPE } from "./resource-types";

/** Devices each CNI creates that NetworkManager must not manage (RKE2 docs, seed 003). */
export const CNI_DEVICES: Readonly<Record<string, readonly string[]>> = {
  calico: ["cali*", "vxlan.calico", "tunl*"],
  canal: ["cali*", "flannel*"],
  flannel: ["flannel*"],
  cilium: ["cilium*", "lxc*"],
};

function unmanagedDevices(config: string): string[] {
  const line = config.split("\n").find((l) => l.startsWith("unmanaged-devices="));
  return (line?.slice("unmanaged-devices=".length).split(";") ?? []).map((d) =>
    d.replace(/^interface-name:/, ""),
  );
}

export const cniDevicesUnmanaged: ResourceValidationPolicy = {
  name: "cni-devices-unmanaged",
  description:
    "NetworkManager's unmanaged-devices list covers the devices of the node's CNI, and kube-ipvs0 when kube-proxy runs in IPVS mode.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== NODE_PREPARATION_TYPE) return;
    const config = String(args.props.networkManagerConfig ?? "");
    const devices = config.includes("[keyfile]") ? unmanagedDevices(config) : [];
    const cni = String(args.props.cni ?? "");
    const required = [
      ...(CNI_DEVICES[cni] ?? []),
      ...(args.props.kubeProxyMode === "ipvs" ? ["kube-ipvs0"] : []),
    ];
    const missing = required.filter((d) => !devices.includes(d));
    if (missing.length > 0) {
      reportViolation(
        `node ${String(args.props.node)}: NetworkManager must leave ${missing.join(", ")} unmanaged ` +
          `(${cni}${args.props.kubeProxyMode === "ipvs" ? ", kube-proxy IPVS" : ""}); a managed CNI device or kube-ipvs0 ` +
          "loses its addresses and routes, and pods get `no route to host` (seed 003).",
      );
    }
  },
};
