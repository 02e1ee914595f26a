/** Minimal flag parsing for the offline commands: --name value and boolean --flag. */
export function parseFlags(
  argv: readonly string[],
  booleans: readonly string[],
): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("--"))
      throw new Error(`unexpected argument "${arg}"; flags start with --.`);
    const name = arg.slice(2);
    if (booleans.includes(name)) {
      flags.set(name, "true");
    } else {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith("--"))
        throw new Error(`--${name} needs a value.`);
      flags.set(name, value);
      i++;
    }
  }
  return flags;
}
