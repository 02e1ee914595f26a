import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { SECRET_KEYS, SecretKey } from "../../components/model";
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

/** Reads the config the Pulumi engine handed to this program. Secret values are left out. */
export function rawConfigFromPulumi(): RawStackConfig {
  const all = pulumi.runtime.allConfig();
  const secretFullKeys = new Set<string>(
    JSON.parse(process.env.PULUMI_CONFIG_SECRET_KEYS ?? "[]") as string[],
  );
  const values: Record<string, unknown> = {};
  const secretKeys = new Set<string>();
  const otherNamespaceKeys: string[] = [];
  for (const [fullKey, text] of Object.entries(all)) {
    const [ns, key] = splitKey(fullKey);
    if (ns !== CONFIG_NAMESPACE) {
      otherNamespaceKeys.push(`${ns}:${key}`);
      continue;
    }
    if (secretFullKeys.has(fullKey)) {
      secretKeys.add(key);
      continue;
    }
    values[key] = parseConfigText(text);
  }
  return { values, secretKeys, otherNamespaceKeys };
}

/** The secrets of a stack, as Pulumi secret outputs. Absent ones are undefined. */
export type EnvironmentSecrets = Readonly<Partial<Record<SecretKey, pulumi.Output<string>>>>;

export function secretsFromPulumi(): EnvironmentSecrets {
  const config = new pulumi.Config(CONFIG_NAMESPACE);
  const secrets: Partial<Record<SecretKey, pulumi.Output<string>>> = {};
  for (const key of SECRET_KEYS) {
    const value = config.getSecret(key);
    if (value !== undefined) secrets[key] = value;
  }
  return secrets;
}

function splitKey(fullKey: string): [string, string] {
  const i = fullKey.indexOf(":");
  if (i < 0) return ["", fullKey];
  // The engine may hand keys as "<ns>:config:<key>" (older form).
  return [fullKey.slice(0, i), fullKey.slice(i + 1).replace(/^config:/, "")];
}

function isSecureValue(value: unknown): boolean {
  return typeof value === "object" && value !== null && "secure" in value;
}

/** Structured config arrives as JSON text; plain strings stay strings. */
function parseConfigText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
