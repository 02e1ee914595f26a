/**
 * Evaluates the pack's policies on recorded resources without the Pulumi engine, for `verify`
 * and the policy tests. It builds the same argument shapes the policy SDK hands to policies.
 */
import {
  EnforcementLevel,
  Policy,
  PolicyResource,
  ResourceValidationArgs,
  ResourceValidationPolicy,
  StackValidationPolicy,
} from "@pulumi/policy";
import type { RecordedResource } from "../components/model";

export interface Violation {
  readonly policy: string;
  readonly level: EnforcementLevel;
  /** URN of the resource the violation is about, when there is one. */
  readonly resource?: string;
  readonly message: string;
}

class NotApplicable extends Error {}

const notApplicable = (reason?: string): never => {
  throw new NotApplicable(reason);
};

function policyOptions(r: RecordedResource, parent?: string) {
  return {
    protect: r.protect,
    ignoreChanges: [...r.ignoreChanges],
    aliases: [],
    customTimeouts: { createSeconds: 0, updateSeconds: 0, deleteSeconds: 0 },
    additionalSecretOutputs: [...r.additionalSecretOutputs],
    parent,
  };
}

/** The Pulumi SDK's marker for a secret value in serialized properties. */
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

/** Unwraps secrets, as the policy SDK shows them to policies (plain values). */
function unwrapSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapSecrets);
  if (typeof value === "object" && value !== null) {
    const obj = value as Record<string, unknown>;
    if (Object.values(obj).includes(SECRET_SIG) && "value" in obj) return unwrapSecrets(obj.value);
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, unwrapSecrets(v)]));
  }
  return value;
}

/** Props as policies see them: inputs without the dynamic provider's serialized code. */
function propsOf(r: RecordedResource): Record<string, unknown> {
  const { __provider: _provider, ...props } = r.inputs;
  return unwrapSecrets(props) as Record<string, unknown>;
}

export function resourceArgs(r: RecordedResource): ResourceValidationArgs {
  return {
    type: r.type,
    props: propsOf(r),
    urn: r.urn,
    name: r.name,
    opts: policyOptions(r, r.parent || undefined),
    stackTags: new Map(),
    isType: () => false,
    asType: () => undefined,
    getConfig: <T extends object>() => ({}) as T,
    notApplicable,
  };
}

export function stackResources(resources: readonly RecordedResource[]): PolicyResource[] {
  const byUrn = new Map<string, PolicyResource>();
  for (const r of resources) {
    byUrn.set(r.urn, {
      type: r.type,
      props: propsOf(r),
      urn: r.urn,
      name: r.name,
      opts: policyOptions(r, r.parent || undefined),
      dependencies: [],
      propertyDependencies: {},
      isType: () => false,
      asType: () => undefined,
    });
  }
  for (const r of resources) {
    const pr = byUrn.get(r.urn)!;
    pr.parent = r.parent ? byUrn.get(r.parent) : undefined;
    pr.dependencies = r.dependencies
      .map((u) => byUrn.get(u))
      .filter((x): x is PolicyResource => x !== undefined);
    for (const [prop, urns] of Object.entries(r.propertyDependencies)) {
      pr.propertyDependencies[prop] = urns
        .map((u) => byUrn.get(u))
        .filter((x): x is PolicyResource => x !== undefined);
    }
  }
  return [...byUrn.values()];
}

/** Enforcement levels set for the run, as a policy pack config file gives them. */
export interface EnforcementOverrides {
  /** The level of every policy ("all" in the file). */
  readonly all?: EnforcementLevel;
  /** Per policy name; wins over `all`. */
  readonly byPolicy?: Readonly<Record<string, EnforcementLevel>>;
}

const LEVELS: readonly EnforcementLevel[] = ["advisory", "mandatory", "remediate", "disabled"];

/**
 * Reads a policy pack config file as `pulumi preview --policy-pack-config` takes it: a JSON
 * object whose "all" key sets the level of every policy and whose other keys set one policy's,
 * each either a level or an object with `enforcementLevel` (pulumi.com docs, Policy as code,
 * "Configuring policy packs": "The top-level enforcement level under all will override the
 * existing enforcement levels of all policies ... A configured enforcement level for a specific
 * policy will override"). A key that names no policy of the pack is an error.
 */
export function parsePolicyPackConfig(
  text: string,
  file: string,
  policyNames: readonly string[],
): EnforcementOverrides {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON; write it as {"<policy name>": "advisory"}.`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw new Error(`${file} is not a JSON object of policy names.`);
  const levelIn = (key: string, value: unknown): EnforcementLevel => {
    const level =
      typeof value === "object" && value !== null
        ? (value as { enforcementLevel?: unknown }).enforcementLevel
        : value;
    if (!LEVELS.includes(level as EnforcementLevel))
      throw new Error(
        `${file}: "${key}" sets no enforcement level; use one of ${LEVELS.join(", ")}.`,
      );
    return level as EnforcementLevel;
  };
  const byPolicy: Record<string, EnforcementLevel> = {};
  let all: EnforcementLevel | undefined;
  for (const [key, value] of Object.entries(doc)) {
    if (key === "all") all = levelIn(key, value);
    else if (policyNames.includes(key)) byPolicy[key] = levelIn(key, value);
    else throw new Error(`${file}: "${key}" is not a policy of this pack.`);
  }
  return { all, byPolicy };
}

function levelOf(policy: Policy, overrides: EnforcementOverrides): EnforcementLevel {
  return (
    overrides.byPolicy?.[policy.name] ?? overrides.all ?? policy.enforcementLevel ?? "advisory"
  );
}

export async function evaluatePolicies(
  policies: readonly Policy[],
  resources: readonly RecordedResource[],
  overrides: EnforcementOverrides = {},
): Promise<Violation[]> {
  const violations: Violation[] = [];
  const stack = stackResources(resources);
  for (const policy of policies) {
    const level = levelOf(policy, overrides);
    if (level === "disabled") continue;
    const report = (resource?: string) => (message: string, urn?: string) =>
      violations.push({ policy: policy.name, level, resource: urn ?? resource, message });
    try {
      if ("validateResource" in policy && policy.validateResource) {
        const validators = ([] as unknown[]).concat(
          (policy as ResourceValidationPolicy).validateResource,
        );
        for (const r of resources) {
          for (const validate of validators as ((
            a: ResourceValidationArgs,
            rep: (m: string, u?: string) => void,
          ) => void | Promise<void>)[]) {
            try {
              await validate(resourceArgs(r), report(r.urn));
            } catch (err) {
              if (!(err instanceof NotApplicable)) throw err;
            }
          }
        }
      }
      if ("validateStack" in policy && policy.validateStack) {
        await (policy as StackValidationPolicy).validateStack!(
          {
            resources: stack,
            stackTags: new Map(),
            getConfig: <T extends object>() => ({}) as T,
            notApplicable,
          },
          report(undefined),
        );
      }
    } catch (err) {
      if (!(err instanceof NotApplicable)) throw err;
    }
  }
  return violations;
}
