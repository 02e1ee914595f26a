/**
 * Flag parsing for the offline commands, on Node's own `util.parseArgs` (strict: an unknown
 * flag or a flag without its value is an error, never a silent default). `--help` prints the
 * command's usage.
 */
import { parseArgs } from "util";
import { closest } from "../config/reader";

export interface CommandSpec {
  /** `npm run <command> -- ...` */
  readonly usage: string;
  /** Flag name -> whether it takes a value, and what it means. */
  readonly flags: Readonly<Record<string, { readonly value: boolean; readonly help: string }>>;
}

/** `--management-outputs`, for a stack that names `managementStack` (render and verify). */
export const MANAGEMENT_OUTPUTS_FLAG = {
  value: true,
  help: "the managementStack's outputs, as pulumi stack output --json wrote them",
} as const;

export type CommandLine =
  | { readonly help: true; readonly text: string }
  | { readonly help: false; readonly flags: ReadonlyMap<string, string> };

/** The usage text: the synopsis, then each flag with its meaning. */
export function usageOf(spec: CommandSpec): string {
  const rows = Object.entries(spec.flags).map(
    ([name, f]) => `  --${name}${f.value ? " <value>" : ""}`.padEnd(34) + f.help,
  );
  return [`usage: ${spec.usage}`, ...rows, "  --help".padEnd(34) + "print this text"].join("\n");
}

/** Parses argv; an error names the flag, the closest known one, and shows the usage. */
export function parseCommandLine(argv: readonly string[], spec: CommandSpec): CommandLine {
  const options = Object.fromEntries([
    ...Object.entries(spec.flags).map(([name, f]) => [
      name,
      { type: f.value ? ("string" as const) : ("boolean" as const) },
    ]),
    ["help", { type: "boolean" as const }],
  ]);
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (err) {
    const unknown = /Unknown option '--?([^']+)'/.exec((err as Error).message)?.[1];
    const hint = unknown && closest(unknown, Object.keys(spec.flags));
    const why = unknown
      ? `unknown flag --${unknown}${hint ? `; did you mean --${hint}?` : ""}`
      : (err as Error).message;
    throw new Error(`${why}\n${usageOf(spec)}`);
  }
  if (values.help) return { help: true, text: usageOf(spec) };
  const flags = new Map<string, string>();
  for (const [name, value] of Object.entries(values))
    if (value !== undefined) flags.set(name, String(value));
  return { help: false, flags };
}
