/**
 * Dynamic provider for the DNS host records of a libvirt network, over SSH + virsh.
 * `read` reports what the network really holds, so `pulumi refresh` and
 * `pulumi preview --refresh` show records removed or changed by hand.
 * Runs in Pulumi's dynamic-provider process: everything it uses is imported at module level
 * and captured by the closure serializer; nothing here may hold a client across calls.
 */
import * as pulumi from "@pulumi/pulumi";
import type { SshEndpoint } from "../model";
import * as ssh from "../ssh/run-script";
import * as xml from "./render";

export interface LibvirtDnsState {
  readonly connection: SshEndpoint;
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  readonly network: string;
  readonly subnet: string;
  /**
   * Records this resource owns, as desired on input and as found on output: on output only the
   * names it owns, on the IPs it owns.
   */
  readonly records: readonly xml.DnsHostRecord[];
  /** Names on this resource's IPs that it does not own (added by hand); kept, never deleted. */
  readonly foreignHostnames?: readonly xml.DnsHostRecord[];
  /** Records on the network that this resource does not own; left alone. */
  readonly unmanagedRecords?: readonly xml.DnsHostRecord[];
  /** The network's DNS domain as found live. */
  readonly domain?: string;
  /** When set, the DHCP domain the persistent definition should hand out (off by default). */
  readonly dhcpDomain?: string;
  /**
   * Take the stack's names off records on IPs the stack does not list (stale records, such as an
   * old Rancher node's). Off by default: those records are reported and kept.
   */
  readonly removeStaleRecords?: boolean;
  /** The persistent definition's domain as found. */
  readonly configuredDomain?: string;
  /** Script text run on the KVM host. */
  readonly script: string;
  /** What the last create or update changed on the network, line by line. */
  readonly lastChanges?: readonly string[];
}

async function runNetworkScript(
  state: LibvirtDnsState,
  params: {
    ACTION: "read" | "apply";
    ADD?: string;
    MODIFY?: string;
    DELETE?: string;
    DOMAIN?: string;
  },
): Promise<string> {
  const result = await ssh.runHostScript(state.connection, state, state.script, {
    label: `libvirt host ${state.connection.host}, network ${state.network}`,
    params: { NETWORK: state.network, ...params },
    timeoutMs: 120000,
    log: (line) => pulumi.log.info(line),
  });
  return result.stdout;
}

/** The state as found: `claimed` says which names on which IPs this resource owns. */
function observe(
  state: LibvirtDnsState,
  networkXml: string,
  claimed: readonly xml.DnsHostRecord[],
): LibvirtDnsState {
  const split = xml.dnsHostOwnership(xml.parseDnsHosts(networkXml), claimed);
  return {
    ...state,
    records: split.owned,
    foreignHostnames: split.foreign,
    unmanagedRecords: split.unmanaged,
    domain: xml.parseNetworkDomain(networkXml),
    configuredDomain: xml.parsePersistentDomain(networkXml),
  };
}

function warnForeign(state: LibvirtDnsState, foreign: readonly xml.DnsHostRecord[]): void {
  for (const r of foreign) {
    pulumi.log.warn(
      `network ${state.network}: ${r.ip} also carries ${r.hostnames.join(", ")}, which this stack ` +
        `does not own; kept in the record for ${r.ip} (merged), never deleted.`,
    );
  }
}

/**
 * Converges the network to `desired`. `claimed` lists the names this resource held before (by
 * IP); names on those IPs that neither list holds belong to someone else and are kept.
 * One read, then at most one apply.
 */
async function converge(
  desired: LibvirtDnsState,
  claimed: readonly xml.DnsHostRecord[],
): Promise<LibvirtDnsState> {
  // Read first, so an unchanged network gets no net-update at all.
  const before = await runNetworkScript(desired, { ACTION: "read" });
  const actual = xml.parseDnsHosts(before);
  const owned = xml.planDnsHosts(actual, desired.records, claimed);
  warnForeign(desired, owned.foreign);
  const stale = desired.removeStaleRecords
    ? xml.planStaleRemoval(actual, desired.records, claimed)
    : { modify: [], remove: [], stale: [] };
  const plan = {
    ...owned,
    modify: [...owned.modify, ...stale.modify],
    remove: [...owned.remove, ...stale.remove],
  };
  const domainChange =
    desired.dhcpDomain !== undefined && xml.parsePersistentDomain(before) !== desired.dhcpDomain;
  const nothingToDo = plan.add.length + plan.modify.length + plan.remove.length === 0;
  if (nothingToDo && !domainChange) {
    return { ...observe(desired, before, desired.records), lastChanges: [] };
  }
  const after = await runNetworkScript(desired, {
    ACTION: "apply",
    ADD: plan.add.map(xml.renderDnsHostXml).join("\n"),
    MODIFY: plan.modify.map(xml.renderDnsHostXml).join("\n"),
    DELETE: plan.remove.join("\n"),
    DOMAIN: desired.dhcpDomain ?? "",
  });
  const replaced = new Set(xml.parseReplacedWithoutModify(after));
  for (const ip of replaced) {
    pulumi.log.warn(
      `network ${desired.network}: libvirt on ${desired.connection.host} refuses to modify a ` +
        `dns-host record (libvirt before 10.6), so the record for ${ip} was deleted and added ` +
        `back; its names went unanswered for a moment.`,
    );
  }
  const lastChanges = [
    ...(domainChange
      ? [`set DHCP domain ${desired.dhcpDomain} (applies at the next network restart)`]
      : []),
    ...plan.add.map((r) => `added dns-host ${r.ip} ${r.hostnames.join(",")}`),
    ...plan.modify.map(
      (r) =>
        `${replaced.has(r.ip) ? "replaced (delete + add)" : "modified"} dns-host ${r.ip} ` +
        r.hostnames.join(","),
    ),
    ...plan.remove.map((ip) => `removed dns-host ${ip}`),
    ...stale.stale.map(
      (r) =>
        `took ${r.hostnames.join(",")} off the stale record of ${r.ip} (libvirt.removeStaleRecords)`,
    ),
  ];
  return { ...observe(desired, after, desired.records), lastChanges };
}

function key(records: readonly xml.DnsHostRecord[]): string {
  return JSON.stringify([...records].sort((a, b) => a.ip.localeCompare(b.ip)));
}

/** What a stored state claims: its records, and the IPs it found foreign names on. */
function claimsOf(state: LibvirtDnsState): xml.DnsHostRecord[] {
  const foreignIps = (state.foreignHostnames ?? []).map((r) => ({ ip: r.ip, hostnames: [] }));
  return [...state.records, ...foreignIps];
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
      ssh.inputsDiffer(olds, news, ["connection", "sshKeyFingerprint", "script"]) ||
      (news.dhcpDomain !== undefined && olds.configuredDomain !== news.dhcpDomain) ||
      (news.removeStaleRecords === true &&
        xml.staleRecords(olds.unmanagedRecords ?? [], news.records).length > 0);
    return { changes: changed, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: LibvirtDnsState): Promise<pulumi.dynamic.CreateResult> {
    const outs = await converge(inputs, inputs.records);
    return { id: `${inputs.connection.host}/${inputs.network}/dns-hosts`, outs };
  },

  async read(id: string, props: LibvirtDnsState): Promise<pulumi.dynamic.ReadResult> {
    const networkXml = await runNetworkScript(props, { ACTION: "read" });
    return { id, props: observe(props, networkXml, claimsOf(props)) };
  },

  async update(
    _id: string,
    olds: LibvirtDnsState,
    news: LibvirtDnsState,
  ): Promise<pulumi.dynamic.UpdateResult> {
    return { outs: await converge(news, claimsOf(olds)) };
  },

  // Removes only this resource's names; a record that also carries foreign names stays, with
  // them. (The component retains this resource on `pulumi destroy`; this runs when retention
  // is lifted or the provider is driven directly.)
  async delete(_id: string, props: LibvirtDnsState): Promise<void> {
    await converge({ ...props, records: [] }, claimsOf(props));
  },
};
