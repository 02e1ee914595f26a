/**
 * Keys the stack config declares: a misspelt namespace, an unknown key (with the closest known
 * one), a key the deployed parts do not read.
 */
import { DeployPart } from "./deploy-parts";
import { closest, ConfigReader, editDistance } from "./reader";
import { isListSchema, isSetting, KeySchema, STACK_CONFIG_KEYS } from "./stack-keys";
import { CONFIG_NAMESPACE, RawStackConfig } from "./raw-config";

/**
 * A key in a namespace one edit from ours (`rke2-remediaton:rke2`) is a typo: Pulumi keeps its
 * value and this program never reads it.
 */
export function checkNamespaces(r: ConfigReader, raw: RawStackConfig): void {
  for (const fullKey of raw.otherNamespaceKeys ?? []) {
    const colon = fullKey.indexOf(":");
    const namespace = fullKey.slice(0, colon);
    const key = fullKey.slice(colon + 1);
    if (namespace === CONFIG_NAMESPACE || editDistance(namespace, CONFIG_NAMESPACE) > 1) continue;
    const top = key.split(/[.[]/)[0];
    const known = closest(top, Object.keys(STACK_CONFIG_KEYS)) ?? top;
    r.problemAtFullKey(
      fullKey,
      `is in namespace "${namespace}", one edit from "${CONFIG_NAMESPACE}"; this program reads ` +
        `only ${CONFIG_NAMESPACE}:* keys, so the value is ignored. Did you mean ` +
        `${r.key(known + key.slice(top.length))}? Rename the key.`,
    );
  }
}

/** Reports every key, at any depth, that STACK_CONFIG_KEYS does not list. */
export function checkKnownKeys(r: ConfigReader, raw: RawStackConfig): void {
  const top: Record<string, unknown> = { ...raw.values };
  for (const key of raw.secretKeys) if (!(key in top)) top[key] = "";
  walkKnownKeys(r, top, STACK_CONFIG_KEYS, "");
}

function walkKnownKeys(r: ConfigReader, value: unknown, schema: KeySchema, path: string): void {
  if (isSetting(schema)) return;
  if (isListSchema(schema)) {
    if (Array.isArray(value)) {
      value.forEach((item, i) => walkKnownKeys(r, item, schema[0], `${path}[${i}]`));
    }
    return;
  }
  // A value of the wrong shape is reported by the reader of that key.
  if (typeof value !== "object" || value === null || Array.isArray(value)) return;
  const known = Object.keys(schema);
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (Object.prototype.hasOwnProperty.call(schema, key)) {
      walkKnownKeys(r, child, schema[key], childPath);
      continue;
    }
    const near = closest(key, known);
    r.problem(
      childPath,
      "is not a setting this program uses here, so its value would be ignored without a word" +
        (near ? `; did you mean ${r.key(path ? `${path}.${near}` : near)}?` : ".") +
        " Rename or remove it.",
    );
  }
}

/** "is unused because deploy.x is false ...": a key that only parts turned off read. */
export function unusedKeyMessage(r: ConfigReader, parts: readonly DeployPart[]): string {
  const switches = parts.map((p) => r.key(`deploy.${p}`));
  const one = switches.length === 1;
  const listed = one
    ? `${switches[0]} is`
    : `${switches.slice(0, -1).join(", ")} and ${switches[switches.length - 1]} are`;
  return (
    `is unused because ${listed} false, and only ${one ? "that part reads" : "those parts read"} ` +
    `it: its value changes nothing. Remove it, or turn ${one ? "that part" : "one of them"} on.`
  );
}
