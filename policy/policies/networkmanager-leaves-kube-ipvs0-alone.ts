import { ResourceValidationPolicy } from "@pulumi/policy";
import { NODE_PREPARATION_TYPE } from "./resource-types";

const REQUIRED = ["kube-ipvs0", "cali*", "vxlan.calico", "tunl*"];

export const networkManagerLeavesKubeIpvs0Alone: ResourceValidationPolicy = {
  name: "networkmanager-leaves-kube-ipvs0-alone",
  description:
    "NetworkManager's unmanaged-devices list covers kube-ipvs0 and Calico's devices on every node.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== NODE_PREPARATION_TYPE) return;
    const config = String(args.props.networkManagerConfig ?? "");
    const line = config.split("\n").find((l) => l.startsWith("unmanaged-devices="));
    const devices = (line?.slice("unmanaged-devices=".length).split(";") ?? []).map((d) =>
      d.replace(/^interface-name:/, ""),
    );
    const missing = REQUIRED.filter((d) => !devices.includes(d));
    if (!config.includes("[keyfile]") || missing.length > 0) {
      reportViolation(
        `node ${String(args.props.node)}: NetworkManager must leave ${missing.join(", ") || "the CNI devices"} unmanaged ` +
          "([keyfile] unmanaged-devices=...); when it manages kube-ipvs0, ClusterIPs lose their routes (seed 003).",
      );
    }
  },
};
