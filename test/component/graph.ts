import type { RecordedResource } from "../../components/model";

/** Every URN a resource waits for, through dependencies and parents. */
export function waitsFor(
  resources: readonly RecordedResource[],
  urn: string,
  seen = new Set<string>(),
): Set<string> {
  const r = resources.find((x) => x.urn === urn);
  for (const d of [...(r?.dependencies ?? []), ...(r?.parent ? [r.parent] : [])]) {
    if (!seen.has(d)) {
      seen.add(d);
      waitsFor(resources, d, seen);
    }
  }
  return seen;
}
