import { ResourceValidationPolicy } from "@pulumi/policy";
import { inZone, LIBVIRT_DNS_RECORDS } from "../../components/model";

export const libvirtRecordOutsideNeutralizedDomain: ResourceValidationPolicy = {
  name: "libvirt-record-outside-neutralized-domain",
  description:
    "No libvirt DNS record names a host under a search domain the cluster DNS neutralises.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== LIBVIRT_DNS_RECORDS.token) return;
    const domains = (args.props.neutralizedSearchDomains ?? []) as string[];
    const records = (args.props.records ?? []) as { ip: string; hostnames: string[] }[];
    for (const r of records) {
      for (const name of r.hostnames) {
        const domain = domains.find((d) => inZone(name, d));
        if (domain) {
          reportViolation(
            `record ${name} -> ${r.ip} lies under "${domain}", which the cluster DNS answers with NXDOMAIN; ` +
              "pods could never resolve it. Use a name outside the neutralised domains.",
          );
        }
      }
    }
  },
};
