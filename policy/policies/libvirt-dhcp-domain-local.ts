import { StackValidationPolicy } from "@pulumi/policy";
import { LIBVIRT_DNS_RECORDS } from "../../components/model";

/**
 * A stack policy because it looks at what the network was found to hold (the `domain` output
 * recorded by create or refresh), which is known only after the engine has talked to the host.
 */
export const libvirtDhcpDomainLocal: StackValidationPolicy = {
  name: "libvirt-dhcp-domain-local",
  description:
    "Advises moving the libvirt network's DHCP domain off `local`, the root cause of seed 000.",
  enforcementLevel: "advisory",
  validateStack: (args, reportViolation) => {
    for (const dns of args.resources.filter(
      (r) => r.type === LIBVIRT_DNS_RECORDS.token && r.props.domain === "local",
    )) {
      reportViolation(
        `network ${String(dns.props.network)} hands its guests the search domain "local", which its dnsmasq never ` +
          "answers; the cluster DNS fix works around it. Consider a DHCP domain of your own; guests pick it up at their next lease.",
        dns.urn,
      );
    }
  },
};
