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
import Ajv from "ajv";
import type { RecordedResource } from "../components/model";
import { closest } from "../components/model/words";

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

export function resourceArgs(
  r: RecordedResource,
  config: Record<string, unknown> = {},
): ResourceValidationArgs {
  return {
    type: r.type,
    props: propsOf(r),
    urn: r.urn,
    name: r.name,
    opts: policyOptions(r, r.parent || undefined),
    stackTags: new Map(),
    isType: () => false,
    asType: () => undefined,
    getConfig: <T extends object>() => config as T,
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

/** Enforcement levels and policy config set for the run, as a policy pack config file gives them. */
export interface EnforcementOverrides {
  /** The level of every policy ("all" in the file). */
  readonly all?: EnforcementLevel;
  /** Per policy name; wins over `all`. */
  readonly byPolicy?: Readonly<Record<string, EnforcementLevel>>;
  /**
   * Per policy name, what `args.getConfig()` returns: the defaults of its `configSchema` with
   * the file's properties over them, checked against that schema.
   */
  readonly config?: Readonly<Record<string, Record<string, unknown>>>;
}

const LEVELS: readonly EnforcementLevel[] = ["advisory", "mandatory", "remediate", "disabled"];

/**
 * Reads a policy pack config file as `pulumi preview --policy-pack-config` takes it: a JSON
 * object whose "all" key sets the level of every policy and whose other keys set one policy's,
 * each either a level or an object of the policy's config properties with an optional
 * `enforcementLevel` ("environments" names ESC environments and is left alone). Each policy's
 * config is then the defaults of its `configSchema` with the file's properties over them,
 * validated against `{type: object, properties, required}` of that schema, as the CLI does
 * (pulumi/pulumi@v3.259.0 pkg/resource/analyzer/config.go `parsePolicyPackConfig`,
 * `ReconcilePolicyPackConfig`, `convertSchema`). A key that names no policy of the pack is an
 * error here (the CLI ignores it, so a misspelt name would silently change nothing).
 */
export function parsePolicyPackConfig(
  text: string,
  file: string,
  policies: readonly Policy[],
): EnforcementOverrides {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON; write it as {"<policy name>": "advisory"}.`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw new Error(`${file} is not a JSON object of policy names.`);
  const level = (key: string, value: unknown): EnforcementLevel => {
    if (!LEVELS.includes(value as EnforcementLevel))
      throw new Error(
        `${file}: "${key}" sets no enforcement level; use one of ${LEVELS.join(", ")}.`,
      );
    return value as EnforcementLevel;
  };
  const byName = new Map(policies.map((p) => [p.name, p]));
  const byPolicy: Record<string, EnforcementLevel> = {};
  const given: Record<string, Record<string, unknown>> = {};
  let all: EnforcementLevel | undefined;
  for (const [key, value] of Object.entries(doc)) {
    if (key === "environments") continue;
    if (key !== "all" && !byName.has(key))
      throw new Error(
        `${file}: "${key}" is not a policy of this pack; did you mean "${closest(key, ["all", ...byName.keys()])}"?`,
      );
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      const { enforcementLevel, ...properties } = value as Record<string, unknown>;
      if (enforcementLevel !== undefined) {
        if (key === "all") all = level(key, enforcementLevel);
        else byPolicy[key] = level(key, enforcementLevel);
      }
      if (key !== "all") given[key] = properties;
    } else if (key === "all") all = level(key, value);
    else byPolicy[key] = level(key, value);
  }
  const config = Object.fromEntries(
    policies.map((p) => [p.name, policyConfig(p, given[p.name] ?? {}, file)]),
  );
  return { all, byPolicy, config };
}

/**
 * What `args.getConfig()` gives a policy: the defaults of its `configSchema` with `given` over
 * them, checked against `{type: object, properties, required}` of that schema. The CLI applies
 * the defaults with or without a config file; `from` names the file in an error.
 */
function policyConfig(
  policy: Policy,
  given: Record<string, unknown>,
  from: string,
): Record<string, unknown> {
  const schema = policy.configSchema;
  if (!schema) return given;
  const defaults = Object.fromEntries(
    Object.entries(schema.properties ?? {})
      .filter(([, p]) => "default" in p)
      .map(([k, p]) => [k, (p as { default: unknown }).default]),
  );
  const props = { ...defaults, ...given };
  const check = new Ajv({ allErrors: true, strict: false }).compile({
    type: "object",
    ...(schema.properties ? { properties: schema.properties } : {}),
    ...(schema.required?.length ? { required: schema.required } : {}),
  });
  if (!check(props)) {
    const why = (check.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
    throw new Error(`${from}: the config of ${policy.name} is invalid: ${why.join(", ")}.`);
  }
  return props;
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
    const config = overrides.config?.[policy.name] ?? policyConfig(policy, {}, policy.name);
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
              await validate(resourceArgs(r, config), report(r.urn));
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
            getConfig: <T extends object>() => config as T,
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
