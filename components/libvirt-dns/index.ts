import * as pulumi from "@pulumi/pulumi";
import { LIBVIRT_DNS_RECORDS, SshEndpoint } from "../model";
import { scriptRef } from "../assets";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";
import type { LibvirtDnsState } from "./provider";
import { DnsHostRecord, dnsHostRecords, staleRecords } from "./render";

export {
  dnsHostRecords,
  renderDnsHostXml,
  parseDnsHosts,
  planDnsHosts,
  dnsHostOwnership,
} from "./render";
export type { DnsHostRecord } from "./render";

export interface LibvirtDnsRecordsArgs {
  /** SSH endpoint of the KVM host, with its pinned host key. */
  readonly ssh: SshEndpoint;
  /** Private key for the SSH user; a Pulumi secret. */
  readonly sshPrivateKey: SshKey;
  /** libvirt network name, e.g. `default`. */
  readonly network: string;
  /** The network's subnet, e.g. 192.168.122.0/24; recorded so policies can check record IPs. */
  readonly subnet: string;
  /** Rancher's hostname, when its records are among these; recorded for policies. */
  readonly rancherHostname?: string;
  /** Search domains the cluster DNS neutralises; recorded for policies. */
  readonly neutralizedSearchDomains?: readonly string[];
  /**
   * Move the network's DHCP domain off `local` (seed 000's root cause) to this one. Off by
   * default; libvirt applies it when the network next restarts, guests at their next lease.
   */
  readonly dhcpDomain?: string;
  /** hostname -> IPs. Several records may share a hostname (the Rancher name on three servers). */
  readonly records: Readonly<Record<string, readonly string[]>>;
  /**
   * Take these records' names off records on other IPs (stale ones, such as an old Rancher
   * node's). Off by default: they are reported in a warning and kept.
   */
  readonly removeStaleRecords?: boolean;
}

/** The dynamic resource behind the component; its outputs are the provider's state. */
class DnsHostRecordsResource extends HostStepResource {
  declare readonly records: pulumi.Output<LibvirtDnsState["records"] | undefined>;
  declare readonly unmanagedRecords: pulumi.Output<LibvirtDnsState["unmanagedRecords"]>;
  declare readonly foreignHostnames: pulumi.Output<LibvirtDnsState["foreignHostnames"]>;
}

/**
 * Static `<dns><host>` records in a libvirt network's dnsmasq (seed 000: the Rancher hostname
 * resolves through them). Records owned here are matched by IP; records on other IPs are left
 * alone and reported. A name added by hand to an IP owned here is kept in that IP's record
 * (merged, with a warning) and never deleted. `pulumi refresh` reads the network back, so hand
 * edits of the owned names show as drift.
 */
export class LibvirtDnsRecords extends pulumi.ComponentResource {
  /** The owned records as found on the network after the last update or refresh. */
  public readonly records: pulumi.Output<DnsHostRecord[]>;
  /** Records on the network not owned by this stack. */
  public readonly unmanagedRecords: pulumi.Output<DnsHostRecord[]>;
  /** Names on this stack's IPs that it does not own; kept in those records. */
  public readonly foreignHostnames: pulumi.Output<DnsHostRecord[]>;

  constructor(name: string, args: LibvirtDnsRecordsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:libvirt:DnsRecords", name, {}, opts);
    const desired = dnsHostRecords(args.records);
    const inputs: pulumi.Inputs = {
      network: args.network,
      subnet: args.subnet,
      rancherHostname: args.rancherHostname,
      neutralizedSearchDomains: [...(args.neutralizedSearchDomains ?? [])],
      records: desired,
      unmanagedRecords: undefined,
      foreignHostnames: undefined,
      domain: undefined,
      dhcpDomain: args.dhcpDomain,
      removeStaleRecords: args.removeStaleRecords ?? false,
      configuredDomain: undefined,
      lastChanges: undefined,
    };
    // Retained on delete: destroying the stack must not take the Rancher hostname away from
    // the estate. Records dropped from the config are still removed, by an update.
    const state = new DnsHostRecordsResource(
      "libvirtDns",
      LIBVIRT_DNS_RECORDS,
      `${name}-hosts`,
      {
        ssh: args.ssh,
        sshPrivateKey: args.sshPrivateKey,
        script: scriptRef(__dirname, "network.sh"),
      },
      inputs,
      { parent: this, retainOnDelete: true },
    );
    this.records = state.records.apply((r) => [...(r ?? [])]);
    this.unmanagedRecords = state.unmanagedRecords.apply((r) => [...(r ?? [])]);
    this.foreignHostnames = state.foreignHostnames.apply((r) => [...(r ?? [])]);
    this.unmanagedRecords.apply((unmanaged) => {
      for (const r of staleRecords(unmanaged, desired)) {
        pulumi.log.warn(
          `network ${args.network}: ${r.hostnames.join(", ")} also answers ${r.ip}, which the stack ` +
            `does not list for ${r.hostnames.length > 1 ? "them" : "it"}: dnsmasq answers that address beside ` +
            "the stack's, so some lookups reach a host that is not the one named (a stale record, such " +
            "as an old Rancher node's). " +
            (args.removeStaleRecords
              ? "libvirt.removeStaleRecords takes it off at the next up."
              : "Remove it by hand, or set libvirt.removeStaleRecords: true to have up take it off."),
          this,
        );
      }
      if (unmanaged.length > 0) {
        const list = unmanaged.map((r) => `${r.ip} ${r.hostnames.join(",")}`).join("; ");
        pulumi.log.warn(
          `network ${args.network} also holds records this stack does not own (left alone): ${list}`,
          this,
        );
      }
    });
    this.registerOutputs({
      records: this.records,
      unmanagedRecords: this.unmanagedRecords,
      foreignHostnames: this.foreignHostnames,
    });
  }
}
