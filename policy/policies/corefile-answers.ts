/**
 * What a rendered Corefile answers for a name, beyond which server block receives it
 * (components/cluster-dns/corefile-routing): whether a `template` answers it NXDOMAIN on the spot
 * (CoreDNS runs template before forward, so no upstream is asked), and whether it still reaches
 * the kubernetes plugin (template also runs before kubernetes, so a template covering the name
 * hides the cluster's answers).
 */
import { inZone } from "../../components/model";
import {
  parseCorefile,
  routeName,
  ServerBlock,
} from "../../components/cluster-dns/corefile-routing";

const braceDelta = (line: string) =>
  (line.match(/\{/g) ?? []).length - (line.match(/\}/g) ?? []).length;

interface Template {
  readonly qclass: string;
  readonly qtype: string;
  readonly zones: readonly string[];
  readonly body: readonly string[];
}

/** `template CLASS TYPE [ZONE...] { ... }` directives of a block body. */
function templatesOf(body: readonly string[]): Template[] {
  const templates: { qclass: string; qtype: string; zones: string[]; body: string[] }[] = [];
  let depth = 1;
  let current: (typeof templates)[number] | undefined;
  for (const line of body) {
    if (depth === 1 && /^template(\s|\{|$)/.test(line)) {
      const [, qclass = "", qtype = "", ...zones] = line.replace(/\{$/, "").trim().split(/\s+/);
      current = { qclass: qclass.toUpperCase(), qtype: qtype.toUpperCase(), zones, body: [] };
      templates.push(current);
    } else if (depth > 1) {
      current?.body.push(line);
    }
    depth += braceDelta(line);
    if (depth === 1) current = undefined;
  }
  return templates;
}

const normalize = (name: string) => name.toLowerCase().replace(/\.$/, "") || ".";

/** Whether the template answers `name` (of the types it names) with NXDOMAIN. */
function answersNxdomain(t: Template, name: string, blockZones: readonly string[]): boolean {
  if (!t.body.some((l) => /^rcode\s+NXDOMAIN$/i.test(l))) return false;
  if (t.qclass !== "IN" && t.qclass !== "ANY") return false;
  const zones = t.zones.length > 0 ? t.zones.map(normalize) : blockZones;
  if (!zones.some((z) => inZone(name, z))) return false;
  const patterns = t.body.filter((l) => /^match\s/.test(l)).flatMap((l) => l.split(/\s+/).slice(1));
  return (
    patterns.length === 0 ||
    patterns.some((p) => {
      try {
        return new RegExp(p).test(`${name}.`);
      } catch {
        return false;
      }
    })
  );
}

interface Routed {
  readonly block: ServerBlock;
  readonly templates: readonly Template[];
}

function route(corefile: string, name: string): Routed | undefined {
  const block = routeName(parseCorefile(corefile), name);
  return block && { block, templates: templatesOf(block.body) };
}

/** Whether CoreDNS answers `name` NXDOMAIN itself, for A and AAAA alike, without asking upstream. */
export function answersNxdomainLocally(corefile: string, name: string): boolean {
  const routed = route(corefile, name);
  if (!routed) return false;
  const n = normalize(name);
  const types = new Set(
    routed.templates.filter((t) => answersNxdomain(t, n, routed.block.zones)).map((t) => t.qtype),
  );
  return types.has("ANY") || (types.has("A") && types.has("AAAA"));
}

/** Whether `name` reaches the kubernetes plugin: its block runs it and no template answers first. */
export function reachesKubernetes(corefile: string, name: string): boolean {
  const routed = route(corefile, name);
  if (!routed || !routed.block.plugins.includes("kubernetes")) return false;
  const n = normalize(name);
  return !routed.templates.some((t) => answersNxdomain(t, n, routed.block.zones));
}
