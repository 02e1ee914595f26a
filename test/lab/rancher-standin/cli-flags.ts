/** `--name value` pairs of a stand-in's command line, by name without the dashes. */
export function flags(argv: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) m.set(argv[i].replace(/^--/, ""), argv[i + 1]);
  return m;
}
