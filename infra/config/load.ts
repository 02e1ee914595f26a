/** Stack config and secrets as the Pulumi engine hands them to the program. */
import * as pulumi from "@pulumi/pulumi";
import { SECRET_KEYS, SecretKey } from "../../components/model";
import { splitKey } from "./stack-file";
import { CONFIG_NAMESPACE, RawStackConfig } from "./validate";

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

/** Structured config arrives as JSON text; plain strings stay strings. */
function parseConfigText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
