/**
 * An operator's own rke2-coredns values, kept beside the fix. A cluster adopted with
 * `rke2.dnsDelivery: helmChartConfig` may already hold a HelmChartConfig `rke2-coredns` that its
 * operators wrote (rancher/rke2-docs@9477b7b1 docs/add-ons/helm.md, "Customizing Packaged
 * Components with HelmChartConfig"): a tuned cache, more replicas, a stub zone for a corporate DNS. Its
 * `valuesContent` is one string, and the kubernetes provider's create is a server-side apply that
 * upserts an object already there (pulumi/pulumi-kubernetes provider/v4 pkg/await/await.go, at
 * the commit the toolchain builds), so applying the fix's object would replace all of it; instead
 * those values are kept, and the fix takes only what it owns:
 *   - every top-level key the fix sets, except `servers` and `nodelocal`, which are merged;
 *   - in `nodelocal`, the keys the fix sets (enabled, ip_address, ipvs, extraClusterDomains);
 *   - in each server block the fix renders (the same zones and port), the plugins that make the
 *     fix (OWNED_PLUGINS); the operator's settings of every other plugin in that block are kept,
 *     and their plugins the block lacks are added. CoreDNS runs a server's plugins in the order
 *     of the build's plugin.cfg, whatever their order in the Corefile (coredns/coredns@v1.14.7
 *     plugin.cfg: directives are registered in the order they execute), so an added plugin
 *     needs no place of its own;
 *   - server blocks of other zones are the operator's and come after the fix's;
 *   - `extraConfig` entries, which the chart writes at the head of the Corefile as `<name>
 *     <parameters>` (so `local: {parameters: "{ template ... }"}` is a whole server block, seed
 *     000's own fix), are kept unless they name a zone the fix serves or a name it answers
 *     (its server blocks' zones and `nodelocal.extraClusterDomains`): such a block would take
 *     those names from the fix, or duplicate its zone, which CoreDNS refuses to start with.
 * Pure: no Pulumi, no I/O.
 */
import * as YAML from "yaml";
import { CorednsChartValues, CorednsPlugin, CorednsServer } from "./chart";
import type { LiveHelmChartConfig } from "./kube-api";

/**
 * The plugins that carry the fix in a block it renders: `kubernetes` (cluster names answered
 * before any search-domain zone), `template` (the neutralised domains' NXDOMAIN, seed 000),
 * `hosts` (Rancher's name, seed 000) and `forward` (the stack's upstream resolvers, checked
 * before use, seed 004).
 */
export const OWNED_PLUGINS: readonly string[] = ["kubernetes", "template", "hosts", "forward"];

/** What the merge kept of the operator's values, and what of theirs the fix replaced. */
export interface KeptValues {
  /** The values the HelmChartConfig carries: the fix's with the operator's kept. */
  readonly values: Record<string, unknown>;
  /** Where an operator's value was kept (`replicaCount`, `servers[.:53].cache`). */
  readonly kept: readonly string[];
  /** Where an operator's value differed from the fix's and the fix's took its place. */
  readonly replaced: readonly string[];
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A zone as a name: no scheme, port or trailing dot, lower case (`dns://Local.:53` -> `local`). */
function zoneName(zone: string): string {
  const bare = zone
    .replace(/^[a-z]+:\/\//i, "")
    .replace(/:\d+$/, "")
    .toLowerCase();
  return bare === "." ? "." : bare.replace(/\.$/, "");
}

/** A server block's identity: its zones (with scheme) and port, as `.:53` or `local,lan:53`. */
export function serverKey(server: Partial<CorednsServer>): string {
  const zones = (server.zones ?? [])
    .map((z) => `${(z as { scheme?: string }).scheme ?? ""}${z.zone}`)
    .sort();
  return `${zones.join(",")}:${server.port ?? 53}`;
}

function mergeServer(
  fix: CorednsServer,
  theirs: Partial<CorednsServer>,
  kept: string[],
  replaced: string[],
): CorednsServer {
  const where = `servers[${serverKey(fix)}]`;
  const operatorPlugins = (theirs.plugins ?? []) as CorednsPlugin[];
  const byName = new Map(operatorPlugins.map((p) => [p.name, p]));
  const plugins = fix.plugins.map((plugin) => {
    const own = byName.get(plugin.name);
    if (!own || same(own, plugin)) return plugin;
    if (OWNED_PLUGINS.includes(plugin.name)) {
      replaced.push(`${where}.${plugin.name}`);
      return plugin;
    }
    kept.push(`${where}.${plugin.name}`);
    return own;
  });
  const names = new Set(fix.plugins.map((p) => p.name));
  for (const own of operatorPlugins) {
    if (names.has(own.name)) continue;
    if (OWNED_PLUGINS.includes(own.name)) {
      // A plugin that makes the fix, where the fix's block has none (`forward` in its
      // neutralised-domain block) would undo it there.
      replaced.push(`${where}.${own.name}`);
      continue;
    }
    kept.push(`${where}.${own.name}`);
    plugins.push(own);
  }
  return { ...fix, plugins };
}

/**
 * The fix's values with the operator's kept, as the module comment says. `operator` is the
 * parsed `valuesContent` of their HelmChartConfig (anything but a map keeps nothing).
 */
export function keepOperatorValues(fix: CorednsChartValues, operator: unknown): KeptValues {
  const kept: string[] = [];
  const replaced: string[] = [];
  const theirs = isMap(operator) ? operator : {};
  const values: Record<string, unknown> = {};
  const fixNames = new Set([
    ...(fix.servers ?? []).flatMap((server) => server.zones.map((z) => zoneName(z.zone))),
    ...(fix.nodelocal?.extraClusterDomains ?? []).map(zoneName),
  ]);
  for (const [key, value] of Object.entries(theirs)) {
    if (key in fix) continue;
    if (key === "extraConfig" && isMap(value)) {
      const entries = Object.entries(value).filter(([name]) => {
        if (!fixNames.has(zoneName(name))) return true;
        replaced.push(`extraConfig.${name}`);
        return false;
      });
      if (entries.length === 0) continue;
      values[key] = Object.fromEntries(entries);
      kept.push(...entries.map(([name]) => `extraConfig.${name}`));
      continue;
    }
    values[key] = value;
    kept.push(key);
  }
  for (const [key, value] of Object.entries(fix)) {
    if (key === "servers" || key === "nodelocal") continue;
    if (key in theirs && !same(theirs[key], value)) replaced.push(key);
    values[key] = value;
  }
  if (fix.servers) {
    const operatorServers = (Array.isArray(theirs.servers) ? theirs.servers : []).filter(isMap);
    const byKey = new Map(operatorServers.map((s) => [serverKey(s), s]));
    const fixKeys = new Set(fix.servers.map(serverKey));
    values.servers = [
      ...fix.servers.map((s) => {
        const own = byKey.get(serverKey(s));
        return own ? mergeServer(s, own, kept, replaced) : s;
      }),
      ...operatorServers.filter((s) => {
        const key = serverKey(s);
        if (fixKeys.has(key)) return false;
        kept.push(`servers[${key}]`);
        return true;
      }),
    ];
  } else if ("servers" in theirs) {
    values.servers = theirs.servers;
    kept.push("servers");
  }
  if (fix.nodelocal || "nodelocal" in theirs) {
    const own = isMap(theirs.nodelocal) ? theirs.nodelocal : {};
    const nodelocal: Record<string, unknown> = { ...(fix.nodelocal ?? {}) };
    for (const [key, value] of Object.entries(own)) {
      if (key in nodelocal) {
        if (!same(value, nodelocal[key])) replaced.push(`nodelocal.${key}`);
        continue;
      }
      nodelocal[key] = value;
      kept.push(`nodelocal.${key}`);
    }
    values.nodelocal = nodelocal;
  }
  return { values, kept, replaced };
}

/** Parses a HelmChartConfig's `valuesContent`; a text that is not YAML is an error naming it. */
export function parseValuesContent(text: string, where: string): unknown {
  try {
    return YAML.parse(text) ?? {};
  } catch (err) {
    throw new Error(
      `the valuesContent of ${where} is not YAML (${(err as Error).message.split("\n")[0]}); ` +
        "fix or remove it by hand, then run pulumi up again: the fix keeps the operator's values and cannot read these.",
    );
  }
}

/**
 * The annotation on the HelmChartConfig this project writes that records the operator's
 * `valuesContent` it found there, verbatim: later runs keep those values, not the merged text
 * they themselves wrote, so a value the fix stops owning is dropped and a hand edit of
 * `valuesContent` stays drift. To change a kept value, edit this annotation.
 */
export const OPERATOR_VALUES_ANNOTATION = "rke2-remediation.io/operator-values";

/**
 * The operator's values to keep from the live object: none when there is none; the recorded
 * ones when this project wrote it (it carries `ownAnnotation`); else its whole `valuesContent`,
 * which its operators wrote.
 */
export function operatorValuesOf(
  live: LiveHelmChartConfig,
  ownAnnotation: string,
): { readonly text: string; readonly adopted: boolean } | undefined {
  if (!live.found) return undefined;
  if (ownAnnotation in live.annotations) {
    const recorded = live.annotations[OPERATOR_VALUES_ANNOTATION];
    return recorded ? { text: recorded, adopted: false } : undefined;
  }
  return live.valuesContent.trim() ? { text: live.valuesContent, adopted: true } : undefined;
}
