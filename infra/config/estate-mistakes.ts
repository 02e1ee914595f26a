/**
 * Estate mistakes that are well-formed values: addresses no host can have, ranges that swallow
 * RKE2's own ports, names and ports that cannot work, secrets pasted into plain keys. Each is
 * checked against the values as read, so one run names them all; the checks live with the
 * section or concern they read, and this runs them in order.
 */
import { ConfigReader } from "./reader";
import { checkRegistrationAddressPlacement } from "./cluster-section";
import { checkDnsServerAddresses } from "./dns-section";
import {
  checkClusterNetworkSizes,
  checkNodePortRanges,
  checkPrivateRegistryPorts,
  checkReservedClusterNetworks,
} from "./network-checks";
import { checkNodeAddresses } from "./node-section";
import { checkRancherUrlHost } from "./rancher-section";
import { RawStackConfig } from "./raw-config";
import { checkPlainSecrets } from "./secret-checks";
import { checkSshEndpoints } from "./ssh-section";
import { EstateFacts } from "./values";

/** Every estate check, on the values validateEnvironment read. */
export function checkEstateMistakes(r: ConfigReader, facts: EstateFacts): void {
  const gateway = facts.libvirt?.gateway;
  checkNodeAddresses(r, facts, gateway);
  checkRegistrationAddressPlacement(r, facts, gateway);
  checkClusterNetworkSizes(r, facts.clusters);
  checkReservedClusterNetworks(r, facts.clusters);
  checkNodePortRanges(r, facts.clusters, facts.nodes);
  checkPrivateRegistryPorts(r, facts.clusters);
  checkDnsServerAddresses(r, facts.dns);
  checkEmptyAddressLists(r, facts.raw.values);
  checkSshEndpoints(r, facts);
  checkRancherUrlHost(r, facts.raw.values.rancher);
  checkPlainSecrets(r, facts.raw);
}

/** A host entry with no address answers nothing (the cluster DNS) or adds no record (libvirt). */
function checkEmptyAddressLists(r: ConfigReader, values: RawStackConfig["values"]): void {
  const lists: [string, unknown, string][] = [
    [
      "dns.staticHosts",
      (values.dns as { staticHosts?: unknown } | undefined)?.staticHosts,
      "the cluster DNS would answer nothing for it",
    ],
    [
      "libvirt.dnsRecords",
      (values.libvirt as { dnsRecords?: unknown } | undefined)?.dnsRecords,
      "libvirt would get no record for it",
    ],
  ];
  for (const [key, map, effect] of lists) {
    if (typeof map !== "object" || map === null || Array.isArray(map)) continue;
    for (const [name, ips] of Object.entries(map)) {
      if (Array.isArray(ips) && ips.length === 0) {
        r.problem(
          `${key}["${name}"]`,
          `lists no address; ${effect}. List its IPv4 addresses, e.g. [192.168.122.20], or remove the entry.`,
        );
      }
    }
  }
}
