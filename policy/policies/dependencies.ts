import { PolicyResource } from "@pulumi/policy";

/** Whether `resource` waits for `target`: a path of dependencies or parents leads there. */
export function dependsOn(
  resource: PolicyResource,
  target: PolicyResource,
  seen = new Set<string>(),
): boolean {
  if (seen.has(resource.urn)) return false;
  seen.add(resource.urn);
  const direct = [...resource.dependencies, ...(resource.parent ? [resource.parent] : [])];
  return direct.some((d) => d.urn === target.urn || dependsOn(d, target, seen));
}
