/**
 * Dynamic provider for the DNS host records of a libvirt network, over SSH + virsh.
 * `read` reports what the network really holds, so `pulumi refresh` and
 * `pulumi preview --refresh` show records removed or changed by hand.
 * Runs in Pulumi's dynamic-provider process: everything it uses is imported at module level
 * and captured by the closure serializer; nothing here may hold a client across calls.
 */
import * as pulumi from "@pulumi/pulumi";
import * as ssh from "../ssh/run-script";
import * as xml from "./render";

export interface LibvirtDnsState {
  readonly connection: ssh.PinnedTarget;
  readonly sshPrivateKey: string;
  readonly network: string;
  readonly subnet: string;
  /** Records this resource owns (by IP), as desired on input and as found on output. */
  readonly records: readonly xml.DnsHostRecord[];
  /** Records on the network that this resource does not own; left alone. */
  readonly unmanagedRecords?: readonly xml.DnsHostRecord[];
  /** The network's DNS domain as found live. */
  readonly domain?: string;
  /** When set, the DHCP domain the persistent definition should hand out (off by default). */
  readonly dhcpDomain?: string;
  /** The persistent definition's domain as found. */
  readonly configuredDomain?: string;
  /** Script text run on the KVM host. */
  readonly script: string;
  /** What the last create or update changed on the network, line by line. */
  readonly lastChanges?: readonly string[];
}

async function runNetworkScript(
  state: LibvirtDnsState,
  params: { ACTION: "read" | "apply"; DELETE?: string; ADD?: string; DOMAIN?: string },
): Promise<string> {
  const result = await ssh.runHostScript(state.connection, state.sshPrivateKey, state.script, {
    label: `libvirt host ${state.connection.host}, network ${state.network}`,
    params: { NETWORK: state.network, ...params },
    timeoutMs: 120000,
    log: (line) => pulumi.log.info(line),
  });
  return result.stdout;
}

function observe(
  state: LibvirtDnsState,
  networkXml: string,
  ownedIps: ReadonlySet<string>,
): LibvirtDnsState {
  const all = xml.parseDnsHosts(networkXml);
  return {
    ...state,
    records: all.filter((r) => ownedIps.has(r.ip)),
    unmanagedRecords: all.filter((r) => !ownedIps.has(r.ip)),
    domain: xml.parseNetworkDomain(networkXml),
    configuredDomain: xml.parsePersistentDomain(networkXml),
  };
}

/** Converges the network to `desired`, touching only IPs in `owned`; one read, then one apply. */
async function converge(
  desired: LibvirtDnsState,
  owned: ReadonlySet<string>,
): Promise<LibvirtDnsState> {
  // Read first, so an unchanged network gets no net-update at all.
  const before = await runNetworkScript(desired, { ACTION: "read" });
  const actual = xml.parseDnsHosts(before);
  const wanted = new Map(desired.records.map((r) => [r.ip, r]));
  const deletes = actual
    .filter((r) => owned.has(r.ip) && !(wanted.has(r.ip) && xml.sameRecord(r, wanted.get(r.ip)!)))
    .map((r) => r.ip);
  const adds = desired.records.filter((r) => !actual.some((a) => xml.sameRecord(a, r)));
  const allOwned = new Set([...owned, ...wanted.keys()]);
  const domainChange =
    desired.dhcpDomain !== undefined && xml.parsePersistentDomain(before) !== desired.dhcpDomain;
  if (deletes.length === 0 && adds.length === 0 && !domainChange) {
    return { ...observe(desired, before, allOwned), lastChanges: [] };
  }
  const after = await runNetworkScript(desired, {
    ACTION: "apply",
    DELETE: deletes.join("\n"),
    ADD: adds.map(xml.renderDnsHostXml).join("\n"),
    DOMAIN: desired.dhcpDomain ?? "",
  });
  const lastChanges = [
    ...(domainChange
      ? [`set DHCP domain ${desired.dhcpDomain} (applies at the next network restart)`]
      : []),
    ...deletes.map((ip) => `removed dns-host ${ip}`),
    ...adds.map((r) => `added dns-host ${r.ip} ${r.hostnames.join(",")}`),
  ];
  return { ...observe(desired, after, allOwned), lastChanges };
}

function ipsOf(records: readonly xml.DnsHostRecord[]): Set<string> {
  return new Set(records.map((r) => r.ip));
}

function key(records: readonly xml.DnsHostRecord[]): string {
  return JSON.stringify([...records].sort((a, b) => a.ip.localeCompare(b.ip)));
}

export const libvirtDnsProvider: pulumi.dynamic.ResourceProvider = {
  async diff(
    _id: string,
    olds: LibvirtDnsState,
    news: LibvirtDnsState,
  ): Promise<pulumi.dynamic.DiffResult> {
    const replaces = olds.network !== news.network ? ["network"] : [];
    const changed =
      replaces.length > 0 ||
      key(olds.records) !== key(news.records) ||
      ssh.inputsDiffer(olds, news, ["connection", "sshPrivateKey", "script"]) ||
      (news.dhcpDomain !== undefined && olds.configuredDomain !== news.dhcpDomain);
    return { changes: changed, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: LibvirtDnsState): Promise<pulumi.dynamic.CreateResult> {
    const outs = await converge(inputs, ipsOf(inputs.records));
    return { id: `${inputs.connection.host}/${inputs.network}/dns-hosts`, outs };
  },

  async read(id: string, props: LibvirtDnsState): Promise<pulumi.dynamic.ReadResult> {
    const networkXml = await runNetworkScript(props, { ACTION: "read" });
    return { id, props: observe(props, networkXml, ipsOf(props.records)) };
  },

  async update(
    _id: string,
    olds: LibvirtDnsState,
    news: LibvirtDnsState,
  ): Promise<pulumi.dynamic.UpdateResult> {
    const owned = new Set([...ipsOf(olds.records), ...ipsOf(news.records)]);
    return { outs: await converge(news, owned) };
  },

  async delete(_id: string, props: LibvirtDnsState): Promise<void> {
    await converge({ ...props, records: [] }, ipsOf(props.records));
  },
};
