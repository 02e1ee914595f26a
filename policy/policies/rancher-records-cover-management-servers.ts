import { StackValidationPolicy } from "@pulumi/policy";
import { LIBVIRT_DNS_RECORDS, NODE_PREPARATION } from "../../components/model";

export const rancherRecordsCoverManagementServers: StackValidationPolicy = {
  name: "rancher-records-cover-management-servers",
  description:
    "The libvirt DNS records of Rancher's hostname list exactly the management cluster's servers.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const servers = args.resources
      .filter((r) => r.type === NODE_PREPARATION.token && r.props.cluster === "management")
      .filter((r) => Array.isArray(r.props.roles) && r.props.roles.includes("server"))
      .map((r) => String(r.props.nodeIp))
      .sort();
    for (const dns of args.resources.filter((r) => r.type === LIBVIRT_DNS_RECORDS.token)) {
      const hostname = dns.props.rancherHostname;
      if (typeof hostname !== "string" || servers.length === 0) continue;
      const records = (dns.props.records ?? []) as { ip: string; hostnames: string[] }[];
      const ips = records
        .filter((r) => r.hostnames.includes(hostname))
        .map((r) => r.ip)
        .sort();
      const missing = servers.filter((ip) => !ips.includes(ip));
      const extra = ips.filter((ip) => !servers.includes(ip));
      if (missing.length > 0 || extra.length > 0) {
        reportViolation(
          `${hostname} must resolve to exactly the management servers (${servers.join(", ")})` +
            (missing.length ? `; missing ${missing.join(", ")}` : "") +
            (extra.length ? `; not a server: ${extra.join(", ")}` : "") +
            ". Agents and browsers sent to a missing or wrong address cannot reach Rancher (seed 000).",
          dns.urn,
        );
      }
    }
  },
};
