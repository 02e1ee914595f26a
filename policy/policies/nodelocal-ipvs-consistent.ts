import { ResourceValidationPolicy } from "@pulumi/policy";
import { corednsConfigsOf } from "./coredns-config";

export const nodeLocalIpvsConsistent: ResourceValidationPolicy = {
  name: "nodelocal-ipvs-consistent",
  description:
    "With NodeLocalDNS and kube-proxy in IPVS mode, the chart's nodelocal.ipvs is true and kubelet's cluster-dns is the node-local address.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const config of corednsConfigsOf(args.type, args.props)) {
      const nodelocal = config.values.nodelocal;
      if (!nodelocal?.enabled || config.kubeProxyMode !== "ipvs") continue;
      if (nodelocal.ipvs !== true) {
        reportViolation(
          "kube-proxy runs in IPVS mode but nodelocal.ipvs is not true: the cache would bind the kube-dns address, " +
            "which IPVS already holds on kube-ipvs0, and fail to start.",
        );
      }
      if (config.kubeletClusterDns !== nodelocal.ip_address) {
        reportViolation(
          `kube-proxy runs in IPVS mode but kubelet's cluster-dns is ${config.kubeletClusterDns ?? "unset"}, not ` +
            `${nodelocal.ip_address}: pods would bypass the node-local cache entirely.`,
        );
      }
    }
  },
};
