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

/** Pairs of resources neither of which waits for the other, so they may run at the same time. */
export function unorderedPairs(
  resources: readonly PolicyResource[],
): [PolicyResource, PolicyResource][] {
  const pairs: [PolicyResource, PolicyResource][] = [];
  resources.forEach((a, i) => {
    for (const b of resources.slice(i + 1)) {
      if (!dependsOn(a, b) && !dependsOn(b, a)) pairs.push([a, b]);
    }
  });
  return pairs;
}
