import { ResourceValidationPolicy } from "@pulumi/policy";
import { corednsConfigsOf, corefileOf } from "./coredns-config";

export const corednsForwardNotALoop: ResourceValidationPolicy = {
  name: "coredns-forward-not-a-loop",
  description:
    "CoreDNS never forwards to the cluster DNS address, the node-local cache or a loopback address.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const config of corednsConfigsOf(args.type, args.props)) {
      const corefile = corefileOf(config);
      if (corefile === undefined) continue;
      const nodelocal = config.values.nodelocal?.enabled
        ? config.values.nodelocal.ip_address
        : undefined;
      for (const line of corefile.split("\n").filter((l) => /^\s*forward\s/.test(l))) {
        const targets = line
          .trim()
          .split(/\s+/)
          .slice(2)
          .map((t) => t.replace(/^dns:\/\//, "").replace(/:\d+$/, ""));
        for (const target of targets) {
          const why =
            target === config.clusterDnsIp
              ? "the cluster DNS address (CoreDNS itself)"
              : target === nodelocal
                ? "the node-local cache, which forwards back to CoreDNS"
                : target.startsWith("127.")
                  ? "a loopback address, inside the pod the server itself"
                  : undefined;
          if (why) {
            reportViolation(
              `CoreDNS forwards to ${target}, ${why}: a forwarding loop that the loop plugin kills (seed 004).`,
            );
          }
        }
      }
    }
  },
};
