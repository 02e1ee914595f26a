/** IPv4 address and CIDR arithmetic for inventory checks, and URL hosts. Pure; no lookups. */

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export interface Cidr {
  /** Network address as an unsigned 32-bit number. */
  readonly base: number;
  readonly prefix: number;
  /** The text as written in the stack config. */
  readonly text: string;
}

export function isIpv4(text: string): boolean {
  return IPV4.test(text);
}

export function ipToNumber(ip: string): number {
  return ip.split(".").reduce((acc, octet) => acc * 256 + Number(octet), 0);
}

export function numberToIp(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
}

/** Parses "a.b.c.d/n"; returns undefined when malformed or when host bits are set. */
export function parseCidr(text: string): Cidr | undefined {
  const match = /^([^/]+)\/(\d{1,2})$/.exec(text);
  if (!match || !isIpv4(match[1])) return undefined;
  const prefix = Number(match[2]);
  if (prefix > 32) return undefined;
  const size = 2 ** (32 - prefix);
  const base = ipToNumber(match[1]);
  if (base % size !== 0) return undefined;
  return { base, prefix, text };
}

/**
 * The network an address with host bits set belongs to under its prefix ("10.100.5.0/16" ->
 * "10.100.0.0/16"); undefined when the text is no address and prefix, or is a network already.
 */
export function networkOfPrefix(text: string): string | undefined {
  const match = /^([^/]+)\/(\d{1,2})$/.exec(text);
  if (!match || !isIpv4(match[1]) || Number(match[2]) > 32) return undefined;
  const size = 2 ** (32 - Number(match[2]));
  const address = ipToNumber(match[1]);
  if (address % size === 0) return undefined;
  return `${numberToIp(address - (address % size))}/${match[2]}`;
}

export function cidrSize(cidr: Cidr): number {
  return 2 ** (32 - cidr.prefix);
}

export function cidrContains(cidr: Cidr, ip: string): boolean {
  const n = ipToNumber(ip);
  return n >= cidr.base && n < cidr.base + cidrSize(cidr);
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return a.base < b.base + cidrSize(b) && b.base < a.base + cidrSize(a);
}

/** The n-th address of a network: RKE2 gives kube-dns the 10th address of the service CIDR. */
export function nthAddress(cidr: Cidr, n: number): string {
  return numberToIp(cidr.base + n);
}

/**
 * The host of a URL in lower case, without an IPv6 address's brackets; undefined when the text
 * is not a URL.
 */
export function urlHost(url: unknown): string | undefined {
  if (typeof url !== "string") return undefined;
  try {
    return new URL(url).hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  } catch {
    return undefined;
  }
}
