import { UnknownValueError } from "@pulumi/policy";

/**
 * True while a preview does not know the property's value yet (as opposed to its being absent):
 * the policy SDK throws UnknownValueError on reading an unknown, which would turn the whole check
 * into an advisory "can't run during preview" instead of checking what is known.
 */
export function isUnknownProp(props: Record<string, unknown>, name: string): boolean {
  try {
    void props[name];
    return false;
  } catch (err) {
    if (err instanceof UnknownValueError) return true;
    throw err;
  }
}

/** A property's value, or undefined while a preview does not know it yet. */
export function knownProp(props: Record<string, unknown>, name: string): unknown {
  return isUnknownProp(props, name) ? undefined : props[name];
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

/** The command texts a remote command resource runs: its create, update and delete. */
export function remoteCommandTexts(props: Record<string, unknown>): string[] {
  return ["create", "update", "delete"]
    .map((k) => props[k])
    .filter((v): v is string => typeof v === "string");
}
