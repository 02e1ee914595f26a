/**
 * How CoreDNS picks a server block for a query: among the blocks listening on the port, the one
 * whose zone is the longest suffix of the name. Used by policies to prove that names under the
 * cluster domain still reach the kubernetes plugin.
 */
import { inZone } from "../model";

export interface ServerBlock {
  /** Zones in lower case without the trailing dot ("." for the root). */
  readonly zones: readonly string[];
  readonly port: number;
  /** Plugin names in the order written. */
  readonly plugins: readonly string[];
  /** The trimmed lines inside the block's braces, nested plugin blocks included. */
  readonly body: readonly string[];
}

function normalizeZone(zone: string): string {
  const z = zone.replace(/^[a-z]+:\/\//, "").toLowerCase();
  return z === "." ? "." : z.replace(/\.$/, "");
}

/** Parses the server blocks of a Corefile (top-level directives outside blocks are skipped). */
export function parseCorefile(text: string): ServerBlock[] {
  const blocks: ServerBlock[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const header = /^(\S[^{]*?)\s*\{\s*$/.exec(lines[i]);
    if (!header) continue;
    const keys = header[1].split(/\s+/).filter(Boolean);
    let port = 53;
    const zones = keys.map((key) => {
      const m = /^(.*?)(?::(\d+))?$/.exec(key)!;
      if (m[2]) port = Number(m[2]);
      return normalizeZone(m[1] || ".");
    });
    const plugins: string[] = [];
    const body: string[] = [];
    let depth = 1;
    for (i = i + 1; i < lines.length && depth > 0; i++) {
      const line = lines[i].trim();
      if (depth === 1 && line && line !== "}" && !line.startsWith("#"))
        plugins.push(line.split(/\s+/)[0]);
      depth += (line.match(/\{/g) ?? []).length - (line.match(/\}/g) ?? []).length;
      if (depth > 0) body.push(line);
    }
    i--;
    blocks.push({ zones, port, plugins, body });
  }
  return blocks;
}

/** The block CoreDNS would hand `name` to on `port`, or undefined when none serves it. */
export function routeName(
  blocks: readonly ServerBlock[],
  name: string,
  port = 53,
): ServerBlock | undefined {
  const n = normalizeZone(name);
  let best: { block: ServerBlock; length: number } | undefined;
  for (const block of blocks.filter((b) => b.port === port)) {
    for (const zone of block.zones.filter((z) => inZone(n, z))) {
      const length = zone === "." ? 0 : zone.length;
      if (!best || length > best.length) best = { block, length };
    }
  }
  return best?.block;
}

/** Names a cluster answers under its domain, for checking where they are routed. */
export function sampleClusterNames(clusterDomain: string): string[] {
  return [
    clusterDomain,
    `kubernetes.default.svc.${clusterDomain}`,
    `kube-dns.kube-system.svc.${clusterDomain}`,
    `10-42-0-5.default.pod.${clusterDomain}`,
  ];
}
