import { ResourceValidationPolicy } from "@pulumi/policy";
import { unknownValueKeys } from "../../components/cluster-dns/known-values";
import { corednsConfigsOf } from "./coredns-config";

export const corednsValuesKnownKeys: ResourceValidationPolicy = {
  name: "coredns-values-known-keys",
  description: "rke2-coredns values use only keys the chart has.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const config of corednsConfigsOf(args.type, args.props)) {
      const unknown = unknownValueKeys(config.values);
      if (unknown.length > 0) {
        reportViolation(
          `rke2-coredns has no values ${unknown.join(", ")}; Helm ignores them silently, so the protection they ` +
            "promise is not there (seed 001's force_tcp, healthTimeout, security.*, logging.* are such keys).",
        );
      }
    }
  },
};
