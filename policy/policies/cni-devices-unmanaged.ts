import { ResourceValidationPolicy } from "@pulumi/policy";
import { NODE_PREPARATION } from "../../components/model";
import { unmanagedDeviceSpecs } from "../../components/node-preparation/render";

/** Devices each CNI creates that NetworkManager must not manage (RKE2 docs, seed 003). */
export const CNI_DEVICES: Readonly<Record<string, readonly string[]>> = {
  calico: ["cali*", "vxlan.calico", "tunl*"],
  canal: ["cali*", "flannel*"],
  flannel: ["flannel*"],
  cilium: ["cilium*", "lxc*"],
};

/** The interface names a NetworkManager keyfile config leaves unmanaged. */
export function unmanagedDevices(config: string): string[] {
  return unmanagedDeviceSpecs(config).map((d) => d.replace(/^interface-name:/, ""));
}

export const cniDevicesUnmanaged: ResourceValidationPolicy = {
  name: "cni-devices-unmanaged",
  description: "NetworkManager's unmanaged-devices list covers the devices of the node's CNI.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== NODE_PREPARATION.token) return;
    const devices = unmanagedDevices(String(args.props.networkManagerConfig ?? ""));
    const cni = String(args.props.cni ?? "");
    const required = CNI_DEVICES[cni] ?? [];
    const missing = required.filter((d) => !devices.includes(d));
    if (missing.length > 0) {
      reportViolation(
        `node ${String(args.props.node)}: NetworkManager must leave ${missing.join(", ")} unmanaged ` +
          `(${cni}); a CNI device that NetworkManager manages loses its addresses and routes, and pods get ` +
          "`no route to host` (seed 003).",
      );
    }
  },
};
