import { ConfigProblem } from "./problems";

/**
 * Walks untyped stack config, collecting every problem instead of stopping at the first,
 * so one run of `pulumi preview` or `npm run verify` names all keys that need fixing.
 */
export class ConfigReader {
  readonly problems: ConfigProblem[] = [];

  constructor(readonly namespace: string) {}

  key(path: string): string {
    return `${this.namespace}:${path}`;
  }

  problem(path: string, message: string): void {
    this.problems.push({ key: this.key(path), message });
  }

  /** A problem at a key outside this reader's namespace, given in full ("ns:key"). */
  problemAtFullKey(fullKey: string, message: string): void {
    this.problems.push({ key: fullKey, message });
  }

  object(value: unknown, path: string): Record<string, unknown> | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      this.problem(path, `must be a map of settings, found ${describe(value)}.`);
      return undefined;
    }
    return value as Record<string, unknown>;
  }

  requiredObject(value: unknown, path: string, hint: string): Record<string, unknown> | undefined {
    if (value === undefined) {
      this.problem(path, `is missing; ${hint}`);
      return undefined;
    }
    return this.object(value, path);
  }

  array(value: unknown, path: string): unknown[] | undefined {
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) {
      this.problem(path, `must be a list, found ${describe(value)}.`);
      return undefined;
    }
    return value;
  }

  string(value: unknown, path: string): string | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value.trim() === "") {
      this.problem(path, `must be a non-empty string, found ${describe(value)}.`);
      return undefined;
    }
    return value.trim();
  }

  /**
   * A string kept byte for byte: no trimming. For values whose exact bytes matter, such as
   * Rancher's CA, whose checksum covers its trailing newline.
   */
  text(value: unknown, path: string): string | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value.trim() === "") {
      this.problem(path, `must be a non-empty string, found ${describe(value)}.`);
      return undefined;
    }
    return value;
  }

  requiredString(value: unknown, path: string, hint: string): string | undefined {
    if (value === undefined || value === "") {
      this.problem(path, `is missing; ${hint}`);
      return undefined;
    }
    return this.string(value, path);
  }

  boolean(value: unknown, path: string, fallback: boolean): boolean {
    if (value === undefined) return fallback;
    if (typeof value !== "boolean") {
      this.problem(path, `must be true or false, found ${describe(value)}.`);
      return fallback;
    }
    return value;
  }

  integer(value: unknown, path: string, fallback: number, min: number, max: number): number {
    if (value === undefined) return fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      this.problem(path, `must be a whole number from ${min} to ${max}, found ${describe(value)}.`);
      return fallback;
    }
    return value;
  }

  stringList(value: unknown, path: string): string[] | undefined {
    const list = this.array(value, path);
    if (!list) return undefined;
    const out: string[] = [];
    list.forEach((item, i) => {
      const s = this.string(item, `${path}[${i}]`);
      if (s !== undefined) out.push(s);
    });
    return out;
  }

  oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[], fallback: T): T {
    if (value === undefined) return fallback;
    if (typeof value === "string" && (allowed as readonly string[]).includes(value)) {
      return value as T;
    }
    this.problem(path, `must be one of ${allowed.join(", ")}, found ${describe(value)}.`);
    return fallback;
  }
}

export function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a map";
  return JSON.stringify(value);
}

export { closest, editDistance } from "../../components/model/words";
