import { ResourceValidationPolicy } from "@pulumi/policy";
import { NODE_PREPARATION } from "../../components/model";
import { unmanagedDevices } from "./cni-devices-unmanaged";

export const networkManagerLeavesKubeIpvs0Alone: ResourceValidationPolicy = {
  name: "networkmanager-leaves-kube-ipvs0-alone",
  description:
    "With kube-proxy in IPVS mode, NetworkManager's keyfile config leaves kube-ipvs0 unmanaged on every node.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== NODE_PREPARATION.token || args.props.kubeProxyMode !== "ipvs") return;
    if (!unmanagedDevices(String(args.props.networkManagerConfig ?? "")).includes("kube-ipvs0")) {
      reportViolation(
        `node ${String(args.props.node)}: NetworkManager must leave kube-ipvs0 unmanaged ([keyfile] unmanaged-devices=...); ` +
          "kube-ipvs0 holds every ClusterIP, and when NetworkManager manages it pods get `no route to host` (seed 003).",
      );
    }
  },
};
