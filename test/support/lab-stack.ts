/**
 * The lab stack (`stacks/Pulumi.lab.yaml`, the seeds' estate) as tests start from it: its raw
 * config, read the way the offline `render` and `verify` commands read it, and its validated model.
 * Cases change one field of a private copy.
 */
import * as assert from "assert/strict";
import { EnvironmentModel } from "../../components/model";
import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/stack-file";
import { RawStackConfig, validateEnvironment } from "../../infra/config/validate";

/** A stack config a test may change: the values are a private deep copy. */
export interface MutableRawConfig extends RawStackConfig {
  readonly values: Record<string, unknown>;
  readonly secretKeys: Set<string>;
}

/** A fresh deep copy of the lab stack's config (secrets recorded as absent). */
export function labRawConfig(): MutableRawConfig {
  const raw = rawConfigFromStackFile(stackFilePath("lab"));
  return { values: structuredClone({ ...raw.values }), secretKeys: new Set(raw.secretKeys) };
}

/** The validated lab model; fails the test with every problem if the config does not validate. */
export function labModel(raw: RawStackConfig = labRawConfig()): EnvironmentModel {
  const { model, problems } = validateEnvironment("lab", raw, { requireSecrets: false });
  assert.deepEqual(problems, []);
  assert.ok(model);
  return model;
}
