import { ResourceValidationPolicy } from "@pulumi/policy";
import { cidrContains, parseCidr, LIBVIRT_DNS_RECORDS } from "../../components/model";

export const libvirtDnsRecordInSubnet: ResourceValidationPolicy = {
  name: "libvirt-dns-record-in-subnet",
  description: "Every libvirt DNS record points into the network's own subnet.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== LIBVIRT_DNS_RECORDS.token) return;
    const subnet = parseCidr(String(args.props.subnet ?? ""));
    if (!subnet) {
      reportViolation(
        `the records of network ${String(args.props.network)} do not state the network's subnet.`,
      );
      return;
    }
    const records = (args.props.records ?? []) as { ip: string; hostnames: string[] }[];
    for (const r of records.filter((rec) => !cidrContains(subnet, rec.ip))) {
      reportViolation(
        `record ${r.hostnames.join(",")} -> ${r.ip} lies outside ${subnet.text}; guests on network ` +
          `${String(args.props.network)} would be sent to an address they cannot reach.`,
      );
    }
  },
};
