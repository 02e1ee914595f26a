import * as assert from "assert/strict";
import { Policy } from "@pulumi/policy";
import { evaluatePolicies, parsePolicyPackConfig, Violation } from "../../policy/evaluate";
import type { RecordedResource } from "../../components/model";

/** A recorded resource of the given type with the given props, for one policy case. */
export function resource(
  type: string,
  props: Record<string, unknown>,
  name = "subject",
): RecordedResource {
  return {
    urn: `urn:pulumi:test::rke2-remediation::${type}::${name}`,
    type,
    name,
    custom: true,
    parent: "",
    inputs: props,
    dependencies: [],
    propertyDependencies: {},
    protect: false,
    retainOnDelete: false,
    ignoreChanges: [],
    additionalSecretOutputs: [],
    provider: "",
  };
}

export async function violationsOf(
  policy: Policy,
  resources: RecordedResource[],
): Promise<Violation[]> {
  return evaluatePolicies([policy], resources);
}

export async function assertViolation(
  policy: Policy,
  resources: RecordedResource[],
  pattern: RegExp,
): Promise<void> {
  const violations = await violationsOf(policy, resources);
  assert.ok(
    violations.some((v) => pattern.test(v.message)),
    `expected a ${policy.name} violation matching ${pattern}, got: ${JSON.stringify(violations.map((v) => v.message))}`,
  );
}

export async function assertNoViolations(
  policy: Policy,
  resources: RecordedResource[],
): Promise<void> {
  assert.deepEqual(
    (await violationsOf(policy, resources)).map((v) => v.message),
    [],
  );
}

export const HOST_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLXN6YTEyMjAyMC0tLS0tLS0tLS0t";

/** A --policy-pack-config file with `file`'s content, read for `policy` as the CLI reads it. */
export function policyPackConfig(policy: Policy, file: unknown) {
  return parsePolicyPackConfig(JSON.stringify(file), "policy-config.json", [policy]);
}

/**
 * A policy's violations, as `level message`, when a --policy-pack-config file with `file`'s
 * content configures the run.
 */
export async function configuredViolations(
  policy: Policy,
  resources: RecordedResource[],
  file: unknown,
): Promise<string[]> {
  const config = policyPackConfig(policy, file);
  return (await evaluatePolicies([policy], resources, config)).map(
    (v) => `${v.level} ${v.message}`,
  );
}
