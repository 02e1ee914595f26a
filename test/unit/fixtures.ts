/**
 * The one compliant fixture every unit test starts from: the `lab` stack file, read the way the
 * offline `render` and `verify` commands read it. Cases change one field of a deep copy.
 */
import * as assert from "assert/strict";
import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/load";
import { EnvironmentModel, SECRET_KEYS } from "../../components/model";
import { ConfigProblem } from "../../infra/config/problems";
import { CONFIG_NAMESPACE, RawStackConfig, validateEnvironment } from "../../infra/config/validate";

/** A stack config a test may change: the values are a private deep copy. */
export interface MutableRawConfig extends RawStackConfig {
  readonly values: Record<string, unknown>;
  readonly secretKeys: Set<string>;
}

/** A path into the values: `"nodes[1].ssh.hostKey"`, or segments when a key contains dots. */
export type ConfigPath = string | readonly (string | number)[];

/** A fresh deep copy of the lab stack's config (secrets recorded as absent). */
export function labRawConfig(): MutableRawConfig {
  const raw = rawConfigFromStackFile(stackFilePath("lab"));
  return { values: structuredClone({ ...raw.values }), secretKeys: new Set(raw.secretKeys) };
}

/** The lab config with every secret recorded as a Pulumi secret, as a deployable stack has. */
export function labRawConfigWithSecrets(): MutableRawConfig {
  const raw = labRawConfig();
  for (const key of SECRET_KEYS) raw.secretKeys.add(key);
  return raw;
}

/** The lab config with one value replaced; `undefined` removes the key. */
export function labWith(path: ConfigPath, value: unknown): MutableRawConfig {
  return setAt(labRawConfig(), path, value);
}

/** Sets (or, with `undefined`, deletes) the value at `path`, creating maps on the way. */
export function setAt(raw: MutableRawConfig, path: ConfigPath, value: unknown): MutableRawConfig {
  const segments = typeof path === "string" ? parsePath(path) : path;
  assert.ok(segments.length > 0, "a config path needs at least one segment");
  let container: Record<string | number, unknown> = raw.values;
  for (const segment of segments.slice(0, -1)) {
    const next = container[segment];
    if (typeof next !== "object" || next === null) container[segment] = {};
    container = container[segment] as Record<string | number, unknown>;
  }
  const last = segments[segments.length - 1];
  if (value === undefined) {
    if (Array.isArray(container) && typeof last === "number") container.splice(last, 1);
    else delete container[last];
  } else {
    container[last] = value;
  }
  return raw;
}

/** The value at `path` in a config, for cases that derive the new value from the old one. */
export function getAt(raw: RawStackConfig, path: ConfigPath): unknown {
  const segments = typeof path === "string" ? parsePath(path) : path;
  let current: unknown = raw.values;
  for (const segment of segments) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

function parsePath(path: string): (string | number)[] {
  const segments: (string | number)[] = [];
  for (const part of path.split(".")) {
    const m = /^([^[\]]+)((?:\[\d+\])*)$/.exec(part);
    assert.ok(m, `cannot parse config path "${path}"`);
    segments.push(m[1]);
    for (const index of m[2].matchAll(/\[(\d+)\]/g)) segments.push(Number(index[1]));
  }
  return segments;
}

/** The full stack key a problem is reported under, e.g. `rke2-remediation:nodes[1].ip`. */
export function stackKey(path: string): string {
  return `${CONFIG_NAMESPACE}:${path}`;
}

export function problemsOf(
  raw: RawStackConfig,
  options: { requireSecrets: boolean } = { requireSecrets: false },
): ConfigProblem[] {
  return validateEnvironment("lab", raw, options).problems;
}

/** The validated lab model; fails the test with every problem if the fixture does not validate. */
export function labModel(raw: RawStackConfig = labRawConfig()): EnvironmentModel {
  const { model, problems } = validateEnvironment("lab", raw, { requireSecrets: false });
  assert.deepEqual(problems, []);
  assert.ok(model);
  return model;
}
