import { UnknownValueError } from "@pulumi/policy";

/**
 * A property's value, or undefined while a preview does not know it yet: the policy SDK throws
 * UnknownValueError on reading an unknown, which would turn the whole check into an advisory
 * "can't run during preview" instead of checking what is known.
 */
export function knownProp(props: Record<string, unknown>, name: string): unknown {
  try {
    return props[name];
  } catch (err) {
    if (err instanceof UnknownValueError) return undefined;
    throw err;
  }
}

export function objectProp(
  props: Record<string, unknown>,
  name: string,
): Record<string, unknown> | undefined {
  const value = props[name];
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)
    : undefined;
}

/** True while a preview does not know the property's value yet (as opposed to its being absent). */
export function isUnknownProp(props: Record<string, unknown>, name: string): boolean {
  try {
    void props[name];
    return false;
  } catch (err) {
    if (err instanceof UnknownValueError) return true;
    throw err;
  }
}

/** The lower-case host of a URL (without IPv6 brackets), undefined when the text is not one. */
export function urlHost(url: unknown): string | undefined {
  if (typeof url !== "string") return undefined;
  try {
    return new URL(url).hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  } catch {
    return undefined;
  }
}
