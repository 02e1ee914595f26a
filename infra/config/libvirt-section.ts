/**
 * `libvirt`: the network the VMs are on, and the gateway libvirt gives it.
 */
import {
  LibvirtSettings,
  Cidr,
  cidrContains,
  cidrSize,
  ipToNumber,
  numberToIp,
} from "../../components/model";
import { ConfigReader } from "./reader";
import { LIBVIRT_KEYS, readSettings } from "./stack-keys";
import { readSsh } from "./ssh-section";
import { cidrOf, hostnameOf, ipOf, isHostname, readIp } from "./values";

const LIBVIRT_NETWORK = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * `libvirt`: the node network, and the KVM host whose network's records the stack manages. The
 * host (`libvirt.ssh`) is required only while the stack manages those records; without it the
 * section may be left out, and the node network is libvirt's default.
 */
export function readLibvirt(
  r: ConfigReader,
  value: unknown,
  hostRequired: boolean,
): LibvirtSettings | undefined {
  const o = hostRequired
    ? r.requiredObject(
        value,
        "libvirt",
        "describe the KVM host (ssh, network, subnet) whose libvirt network serves the nodes.",
      )
    : (r.object(value, "libvirt") ?? {});
  if (!o) return undefined;
  const ssh =
    o.ssh === undefined && !hostRequired
      ? undefined
      : readSsh(r, o.ssh, "libvirt.ssh", undefined, "the libvirt host", hostRequired);
  const v = readSettings(r, LIBVIRT_KEYS, o, "libvirt");
  const network = v.network;
  // The name reaches `virsh net-update <network>` as an argument: one starting with "-" would be
  // read as an option.
  if (!LIBVIRT_NETWORK.test(network)) {
    r.problem(
      "libvirt.network",
      `"${network}" is not a libvirt network name; use the name \`virsh net-list --all\` shows ` +
        `on the KVM host (letters, digits, "_", "." and "-", not starting with "." or "-").`,
    );
  }
  const subnet = cidrOf(r, v.subnet, "libvirt.subnet");
  const records: Record<string, string[]> = {};
  const rawRecords = r.object(o.dnsRecords, "libvirt.dnsRecords") ?? {};
  for (const [name, ips] of Object.entries(rawRecords)) {
    const path = `libvirt.dnsRecords["${name}"]`;
    if (!isHostname(name)) {
      r.problem(path, `"${name}" is not a valid DNS name; fix the record's hostname.`);
      continue;
    }
    const list = r.array(ips, path) ?? [];
    records[name.toLowerCase()] = list
      .map((ip, i) => readIp(r, ip, `${path}[${i}]`))
      .filter((ip): ip is string => ip !== undefined);
  }
  const dhcpDomain = hostnameOf(r, v.dhcpDomain, "libvirt.dhcpDomain");
  const gateway = libvirtGateway(r, v.gateway, subnet);
  if ((hostRequired && !ssh) || !subnet) return undefined;
  return {
    ...(ssh ? { ssh } : {}),
    network,
    subnet: subnet.text,
    ...(gateway ? { gateway } : {}),
    dnsRecords: records,
    dhcpDomain,
    removeStaleRecords: v.removeStaleRecords,
  };
}

/**
 * `libvirt.gateway`: the KVM host's address on the libvirt network, which its dnsmasq serves
 * and the nodes route through. Default: the subnet's first address, where libvirt's default
 * network puts it (libvirt/libvirt@2b9e27710 src/network/default.xml.in: `<ip
 * address='192.168.122.1' netmask='255.255.255.0'>`, DHCP from .2 to .254).
 */
function libvirtGateway(
  r: ConfigReader,
  given: string | undefined,
  subnet: Cidr | undefined,
): string | undefined {
  if (given === undefined) {
    return subnet && subnet.prefix <= 30 ? numberToIp(subnet.base + 1) : undefined;
  }
  const ip = ipOf(r, given, "libvirt.gateway");
  if (ip === undefined || !subnet) return undefined;
  const size = cidrSize(subnet);
  if (
    !cidrContains(subnet, ip) ||
    ip === numberToIp(subnet.base) ||
    ipToNumber(ip) === subnet.base + size - 1
  ) {
    r.problem(
      "libvirt.gateway",
      `${ip} is not a host address of ${r.key("libvirt.subnet")} ${subnet.text}; set the address ` +
        "the KVM host has on the network (`virsh net-dumpxml <network>`, the <ip address=...> element).",
    );
    return undefined;
  }
  return ip;
}
