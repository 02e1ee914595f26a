import type { PolicyConfigJSONSchema } from "@pulumi/policy/schema";

/**
 * A policy config property that lists the estate's own names (namespaces, registries, hosts):
 * non-empty strings matching `pattern`, none by default, so a pack without a config file keeps
 * the policy's meaning without the list.
 */
export function configList(description: string, pattern = ".+"): PolicyConfigJSONSchema {
  return { type: "array", items: { type: "string", pattern }, default: [], description };
}
