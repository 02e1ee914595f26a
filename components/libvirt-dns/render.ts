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

/** The XML `virsh net-update <net> add-last|modify dns-host` takes for one record. */
export function renderDnsHostXml(record: DnsHostRecord): string {
  const names = record.hostnames.map((h) => `<hostname>${escapeXml(h)}</hostname>`).join("");
  return `<host ip='${escapeXml(record.ip)}'>${names}</host>`;
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

/** IPs whose record network.sh replaced by delete + add because libvirt refused `modify`. */
export function parseReplacedWithoutModify(scriptOutput: string): string[] {
  return [...scriptOutput.matchAll(/<!-- replaced without modify: (\S+) -->/g)].map((m) => m[1]);
}

/** The network's DHCP/DNS domain (`<domain name=.../>`), if any. */
export function parseNetworkDomain(networkXml: string): string | undefined {
  return /<domain\s+name=(['"])([^'"]+)\1/.exec(networkXml)?.[2];
}

/** Hostnames claimed per IP, merged over several record lists. */
function claimsByIp(records: readonly DnsHostRecord[]): Map<string, Set<string>> {
  const claims = new Map<string, Set<string>>();
  for (const r of records) {
    if (!claims.has(r.ip)) claims.set(r.ip, new Set());
    for (const h of r.hostnames) claims.get(r.ip)!.add(h);
  }
  return claims;
}

function byIp(a: DnsHostRecord, b: DnsHostRecord): number {
  return a.ip.localeCompare(b.ip, "en", { numeric: true });
}

/** What a network holds, seen from one owner: its names, others' names on its IPs, other IPs. */
export interface DnsHostOwnership {
  /** The claimed names found, per claimed IP (IPs where none is found are left out). */
  readonly owned: DnsHostRecord[];
  /** Names on a claimed IP that the owner does not claim (added by hand or by another tool). */
  readonly foreign: DnsHostRecord[];
  /** Records on IPs the owner claims nothing on. */
  readonly unmanaged: DnsHostRecord[];
}

/** Splits the network's records by owner; `claimed` lists the names the owner holds per IP. */
export function dnsHostOwnership(
  actual: readonly DnsHostRecord[],
  claimed: readonly DnsHostRecord[],
): DnsHostOwnership {
  const claims = claimsByIp(claimed);
  const owned: DnsHostRecord[] = [];
  const foreign: DnsHostRecord[] = [];
  const unmanaged: DnsHostRecord[] = [];
  for (const record of actual) {
    const claim = claims.get(record.ip);
    if (!claim) {
      unmanaged.push(record);
      continue;
    }
    const mine = record.hostnames.filter((h) => claim.has(h));
    const others = record.hostnames.filter((h) => !claim.has(h));
    if (mine.length > 0) owned.push({ ip: record.ip, hostnames: mine });
    if (others.length > 0) foreign.push({ ip: record.ip, hostnames: others });
  }
  return { owned: owned.sort(byIp), foreign: foreign.sort(byIp), unmanaged: unmanaged.sort(byIp) };
}

/** The `virsh net-update` steps that take a network from `actual` to `desired`. */
export interface DnsHostPlan {
  /** Records for IPs the network has no record for (`add-last`). */
  readonly add: DnsHostRecord[];
  /** Records that replace the record of the same IP (`modify`, one update: no name goes missing). */
  readonly modify: DnsHostRecord[];
  /** IPs whose record goes entirely: nothing on them is desired and nobody else named them. */
  readonly remove: string[];
  /** Foreign names on managed IPs, kept in the records written for those IPs. */
  readonly foreign: DnsHostRecord[];
}

/**
 * Plans the change of the managed IPs (those in `desired` or `claimed`). A name on a managed IP
 * that neither `desired` nor `claimed` (what the owner held before) lists is someone else's:
 * it stays in that IP's record. libvirt keys `<host>` records by IP and one IP has one record,
 * so keeping a foreign name means writing it back into the record with the owner's names.
 */
export function planDnsHosts(
  actual: readonly DnsHostRecord[],
  desired: readonly DnsHostRecord[],
  claimed: readonly DnsHostRecord[],
): DnsHostPlan {
  const wanted = claimsByIp(desired);
  const claims = claimsByIp([...claimed, ...desired]);
  const found = new Map(actual.map((r) => [r.ip, r]));
  const plan = { add: [], modify: [], remove: [], foreign: [] } as {
    add: DnsHostRecord[];
    modify: DnsHostRecord[];
    remove: string[];
    foreign: DnsHostRecord[];
  };
  const ips = [...claims.keys()].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  for (const ip of ips) {
    const current = found.get(ip);
    const claim = claims.get(ip)!;
    const others = (current?.hostnames ?? []).filter((h) => !claim.has(h));
    const target = [...new Set([...(wanted.get(ip) ?? []), ...others])].sort();
    if (others.length > 0) plan.foreign.push({ ip, hostnames: others });
    if (!current) {
      if (target.length > 0) plan.add.push({ ip, hostnames: target });
    } else if (target.length === 0) {
      plan.remove.push(ip);
    } else if (!sameRecord(current, { ip, hostnames: target })) {
      plan.modify.push({ ip, hostnames: target });
    }
  }
  return plan;
}

/**
 * Stale records: a name the stack lists, on an IP the stack does not list for it nor claims at
 * all (an old Rancher node's `ai-ear.cn`). dnsmasq answers every `<host>` address of a name, so
 * lookups of the name also reach that host. Each entry holds only the stack's names.
 */
export function staleRecords(
  unmanaged: readonly DnsHostRecord[],
  desired: readonly DnsHostRecord[],
): DnsHostRecord[] {
  const names = new Set(desired.flatMap((r) => r.hostnames));
  return unmanaged
    .map((r) => ({ ip: r.ip, hostnames: r.hostnames.filter((h) => names.has(h)) }))
    .filter((r) => r.hostnames.length > 0)
    .sort(byIp);
}

/**
 * The steps that take the stack's names off the stale records of `actual` (see staleRecords):
 * a record holding only such names goes, one that also holds other names keeps those.
 */
export function planStaleRemoval(
  actual: readonly DnsHostRecord[],
  desired: readonly DnsHostRecord[],
  claimed: readonly DnsHostRecord[],
): { modify: DnsHostRecord[]; remove: string[]; stale: DnsHostRecord[] } {
  const { unmanaged } = dnsHostOwnership(actual, [...claimed, ...desired]);
  const stale = staleRecords(unmanaged, desired);
  const modify: DnsHostRecord[] = [];
  const remove: string[] = [];
  for (const s of stale) {
    const record = unmanaged.find((r) => r.ip === s.ip)!;
    const rest = record.hostnames.filter((h) => !s.hostnames.includes(h));
    if (rest.length === 0) remove.push(s.ip);
    else modify.push({ ip: s.ip, hostnames: rest });
  }
  return { modify, remove, stale };
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
