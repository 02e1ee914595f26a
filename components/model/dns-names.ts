/** DNS names as zones see them. Pure. */

/**
 * Whether `name` is `zone` itself or a name under it, label-wise ("ai-ear.cn" is under "cn", not
 * under "ear.cn"); every name is under the root zone ".". Names compare as written: where input
 * may differ in case or carry a trailing dot, the caller normalizes first.
 */
export function inZone(name: string, zone: string): boolean {
  return zone === "." || name === zone || name.endsWith(`.${zone}`);
}
