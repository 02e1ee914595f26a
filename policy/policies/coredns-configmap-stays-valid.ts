import { ResourceValidationPolicy } from "@pulumi/policy";
import { ChartRenderError, renderChartCorefile } from "../../components/cluster-dns/chart";
import { corednsConfigsOf } from "./coredns-config";

export const corednsConfigMapStaysValid: ResourceValidationPolicy = {
  name: "coredns-configmap-stays-valid",
  description:
    "The rke2-coredns values render into a CoreDNS ConfigMap that is valid YAML and holds the intended Corefile.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const config of corednsConfigsOf(args.type, args.props)) {
      const globals = {
        clusterDnsIp: config.clusterDnsIp ?? "",
        clusterDomain: config.clusterDomain,
      };
      try {
        renderChartCorefile(config.values, globals);
      } catch (err) {
        if (!(err instanceof ChartRenderError)) throw err;
        reportViolation(
          `${err.message}. The chart pastes \`parameters\` verbatim into a block indented four spaces, so every ` +
            "continuation line needs at least four leading spaces, or the HelmChart fails to install and CoreDNS keeps its old config.",
        );
      }
    }
  },
};
