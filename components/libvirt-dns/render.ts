/** Renders libvirt network `<dns><host>` records, the argument of `virsh net-update ... dns-host`. */

/** One `<host>` entry: libvirt keys them by IP; one IP may carry several hostnames. */
export interface DnsHostRecord {
  readonly ip: string;
  readonly hostnames: readonly string[];
}

/** Groups hostname -> IPs into one record per IP, sorted, so equal inputs give equal output. */
export function dnsHostRecords(
  records: Readonly<Record<string, readonly string[]>>,
): DnsHostRecord[] {
  const byIp = new Map<string, Set<string>>();
  for (const [hostname, ips] of Object.entries(records)) {
    for (const ip of ips) {
      if (!byIp.has(ip)) byIp.set(ip, new Set());
      byIp.get(ip)!.add(hostname);
    }
  }
  return [...byIp.entries()]
    .map(([ip, names]) => ({ ip, hostnames: [...names].sort() }))
    .sort((a, b) => a.ip.localeCompare(b.ip, "en", { numeric: true }));
}

/** The XML `virsh net-update <net> add-last dns-host` takes for one record. */
export function renderDnsHostXml(record: DnsHostRecord): string {
  const names = record.hostnames.map((h) => `<hostname>${escapeXml(h)}</hostname>`).join("");
  return `<host ip='${escapeXml(record.ip)}'>${names}</host>`;
}

/**
 * The XML for deleting a record. Only the IP is named: a delete that names the hostname
 * matches every record sharing it and would drop them all.
 */
export function renderDnsHostDeleteXml(ip: string): string {
  return `<host ip='${escapeXml(ip)}'/>`;
}

/** Reads the `<dns><host>` entries out of `virsh net-dumpxml` output. */
export function parseDnsHosts(networkXml: string): DnsHostRecord[] {
  const dns = /<dns\b[^>]*>([\s\S]*?)<\/dns>/.exec(networkXml);
  if (!dns) return [];
  const records: DnsHostRecord[] = [];
  const hostRe = /<host\s+ip=(['"])([^'"]+)\1\s*(?:\/>|>([\s\S]*?)<\/host>)/g;
  for (let m = hostRe.exec(dns[1]); m; m = hostRe.exec(dns[1])) {
    const names = [...(m[3] ?? "").matchAll(/<hostname>([^<]*)<\/hostname>/g)].map((n) =>
      unescapeXml(n[1]),
    );
    records.push({ ip: m[2], hostnames: names.sort() });
  }
  return records.sort((a, b) => a.ip.localeCompare(b.ip, "en", { numeric: true }));
}

/** The domain of the persistent definition, from the marker line network.sh prints first. */
export function parsePersistentDomain(scriptOutput: string): string | undefined {
  const name = /<!-- persistent domain: ([^ ]*) -->/.exec(scriptOutput)?.[1];
  return name ? name : undefined;
}

/** The network's DHCP/DNS domain (`<domain name=.../>`), if any. */
export function parseNetworkDomain(networkXml: string): string | undefined {
  return /<domain\s+name=(['"])([^'"]+)\1/.exec(networkXml)?.[2];
}

export function sameRecord(a: DnsHostRecord, b: DnsHostRecord): boolean {
  return a.ip === b.ip && a.hostnames.join(",") === b.hostnames.join(",");
}

function escapeXml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/'/g, "&apos;")
    .replace(/"/g, "&quot;");
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&apos;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");
}
