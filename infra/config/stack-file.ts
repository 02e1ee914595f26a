/**
 * Stack files read without the Pulumi CLI or SDK, for the offline `render` and `verify` commands
 * and the tests.
 */
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { CONFIG_NAMESPACE, RawStackConfig } from "./validate";

/** Where stack files live, as Pulumi.yaml's stackConfigDir says. */
export const STACKS_DIR = path.resolve(__dirname, "..", "..", "..", "stacks");

export function stackFilePath(stack: string): string {
  return path.join(STACKS_DIR, `Pulumi.${stack}.yaml`);
}

/**
 * Reads a stack file without the Pulumi CLI, for the offline `render` and `verify` commands.
 * Values stored as `secure:` are recorded as present secrets; their ciphertext is never read.
 */
export function rawConfigFromStackFile(file: string): RawStackConfig {
  if (!fs.existsSync(file)) {
    throw new Error(`stack file ${file} does not exist; create it or pass an existing --stack.`);
  }
  const doc = (YAML.parse(fs.readFileSync(file, "utf8")) ?? {}) as {
    config?: Record<string, unknown>;
  };
  const values: Record<string, unknown> = {};
  const secretKeys = new Set<string>();
  const otherNamespaceKeys: string[] = [];
  for (const [fullKey, value] of Object.entries(doc.config ?? {})) {
    const [ns, key] = splitKey(fullKey);
    if (ns !== CONFIG_NAMESPACE) otherNamespaceKeys.push(fullKey);
    else if (isSecureValue(value)) secretKeys.add(key);
    else values[key] = value;
  }
  return { values, secretKeys, otherNamespaceKeys };
}

/** "<namespace>:<key>" split in two; the engine may hand keys as "<ns>:config:<key>" (older form). */
export function splitKey(fullKey: string): [string, string] {
  const i = fullKey.indexOf(":");
  if (i < 0) return ["", fullKey];
  return [fullKey.slice(0, i), fullKey.slice(i + 1).replace(/^config:/, "")];
}

function isSecureValue(value: unknown): boolean {
  return typeof value === "object" && value !== null && "secure" in value;
}
