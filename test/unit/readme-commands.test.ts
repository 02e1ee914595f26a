/**
 * The commands and stack keys README.md and docs/*.md show an operator, checked against the
 * product, so that renaming a flag, a key, a script or a subcommand fails here until the docs say
 * the new name.
 *
 * Commands: every line of a fenced `sh`, `bash` or `shell` block is parsed as shell (quotes,
 * `$(...)`, pipes, `&&`, `;`, redirections, `VAR=value` prefixes, `sudo`), and each simple command
 * is checked by its program:
 *   - `npm run <script> [-- args]` and `npm test`: the script is in package.json. Arguments:
 *     - `render`, `verify`, `doctor`: the CLI is run with them and `--help`; its strict parser
 *       (infra/cli/args.ts) refuses an unknown flag, or a flag without its value, before it
 *       prints the usage, so exit 0 means every flag is accepted;
 *     - `lab`: as `bash test/lab/lab` below; `bench`: as `bash bench/run` below;
 *     - `policy:pack`: the script is run with them, its `--out` in a temporary directory;
 *     - any other script takes none here.
 *   - `npm ci [--prefix <dir>]`: the directory has a package-lock.json.
 *   - `bash <file> [args]`: the file is in the repository. For `test/lab/lab` the subcommand is
 *     one of its dispatch `case` (and `dns` modes and sources, `estate` variants, the octet of
 *     `reset-node` and `nodelocal-loop`) and `exec`'s command is checked in turn; for `bench/run` each argument is one its
 *     argument loop accepts; `RKE2R_TIERS` names tiers test/run-tiers has.
 *   - `pulumi config set ...`: the key is a stack config key (STACK_CONFIG_KEYS), a nested key is
 *     given with `--path` (without it Pulumi stores a literal top-level key), and `--secret` is
 *     given for the four secret keys and only for them.
 *   - `pulumi <command> ...`, when the Pulumi CLI is on PATH or in the toolchain cache: the
 *     command exists (its `--help` usage names it, or an alias of it) and lists each long flag.
 *     Without the CLI this case is skipped, except under CI=true, where it fails.
 *   - the Pulumi version `sh -s -- --version` installs is the toolchain's (versions.env).
 *   - any other program must be one of EXTERNAL_PROGRAMS: tools the docs use on purpose, which
 *     the product does not own. A command of a program not listed fails.
 * A redirection from a repository path (`< components/...`) must name a file that exists.
 *
 * Stack files: each fenced `yaml` block that starts with `config:` is a stack; `npm run verify`
 * reports no config problem and no mandatory violation for it.
 *
 * Stack keys: the table of docs/configuration.md ("## Keys") lists exactly the settings of
 * STACK_CONFIG_KEYS (`.x` after a key is its sibling `x`), and every inline code span of the docs
 * that starts with a top-level key and a `.` or `[` (`rke2.version`, `nodes[i].name`) names a
 * key STACK_CONFIG_KEYS has.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { SECRET_KEYS } from "../../components/model";
import { CONFIG_NAMESPACE } from "../../infra/config/validate";
import {
  isSetting,
  KeyMap,
  KeySchema,
  Setting,
  STACK_CONFIG_KEYS,
} from "../../infra/config/stack-keys";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const CLI = path.resolve(__dirname, "..", "..", "infra", "cli");

/** Programs the docs run that are not the product's: each argument is theirs to check. */
const EXTERNAL_PROGRAMS = new Set([
  "cat",
  "curl",
  "echo",
  "export",
  "openssl",
  "sh",
  "ssh",
  "tail",
]);

/** The Markdown files an operator reads: README.md and every file under docs/. */
function docFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  return ["README.md", ...docs];
}

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");

interface FencedBlock {
  readonly file: string;
  readonly language: string;
  /** 1-based line of the block's first content line. */
  readonly line: number;
  readonly lines: readonly string[];
}

function fencedBlocks(file: string): FencedBlock[] {
  const lines = read(file).split("\n");
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const indent = lines[i].indexOf("`");
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); j++)
      body.push(lines[j].slice(indent));
    blocks.push({ file, language: open[1], line: i + 2, lines: body });
    i = j;
  }
  return blocks;
}

// ---------------------------------------------------------------------------------------------
// Shell: enough of it to read the docs' commands.
// ---------------------------------------------------------------------------------------------

interface SimpleCommand {
  /** `file:line` of the docs. */
  readonly where: string;
  readonly argv: readonly string[];
  readonly assignments: ReadonlyMap<string, string>;
  /** `<` targets (files read). */
  readonly inputs: readonly string[];
}

/** The index just past the `)` that closes the `$(` whose content starts at `from`. */
function closingParen(text: string, from: number): number {
  let depth = 1;
  let quote: string | undefined;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  throw new Error(`unbalanced $( in: ${text}`);
}

/** Splits one line of shell into simple commands; `$(...)` contents become commands too. */
function parseShellLine(text: string, where: string): SimpleCommand[] {
  const commands: SimpleCommand[] = [];
  let words: string[] = [];
  let inputs: string[] = [];
  let word: string | undefined;
  let redirect: "in" | "out" | undefined;
  const endWord = () => {
    if (word === undefined) return;
    if (redirect === "in") inputs.push(word);
    else if (redirect === undefined) words.push(word);
    redirect = undefined;
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    const assignments = new Map<string, string>();
    let argv = words;
    for (let again = true; again;) {
      again = false;
      while (argv.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[0])) {
        const [name, ...value] = argv[0].split("=");
        assignments.set(name, value.join("="));
        argv = argv.slice(1);
      }
      if (argv[0] === "sudo") {
        argv = argv.slice(1);
        again = true;
      }
    }
    if (argv.length > 0) commands.push({ where, argv, assignments, inputs });
    words = [];
    inputs = [];
  };
  const substitution = (start: number): number => {
    const end = closingParen(text, start);
    commands.push(...parseShellLine(text.slice(start, end - 1), where));
    word = (word ?? "") + "$(...)";
    return end;
  };
  for (let i = 0; i < text.length;) {
    const c = text[i];
    const rest = text.slice(i);
    if (c === "#" && word === undefined) break;
    if (/\s/.test(c)) {
      endWord();
      i++;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? "") + text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      word = word ?? "";
      for (i++; i < text.length && text[i] !== '"';) {
        if (text[i] === "\\") {
          word += text[i + 1];
          i += 2;
        } else if (text.startsWith("$(", i)) i = substitution(i + 2);
        else word += text[i++];
      }
      i++;
    } else if (c === "\\") {
      word = (word ?? "") + text[i + 1];
      i += 2;
    } else if (rest.startsWith("$(")) {
      i = substitution(i + 2);
    } else if (rest.startsWith("&&") || rest.startsWith("||")) {
      endCommand();
      i += 2;
    } else if (c === "|" || c === ";" || c === "&") {
      endCommand();
      i++;
    } else if (c === "<" && /^<[A-Za-z][\w.:/-]*>/.test(rest)) {
      const placeholder = /^<[A-Za-z][\w.:/-]*>/.exec(rest)![0];
      word = (word ?? "") + placeholder;
      i += placeholder.length;
    } else if (c === "<" || c === ">") {
      // A descriptor number right before the operator (2>) is not a word.
      if (word !== undefined && /^\d$/.test(word)) word = undefined;
      endWord();
      const op = /^(<|>>?)(&\d)?/.exec(rest)![0];
      redirect = c === "<" ? "in" : "out";
      if (op.includes("&")) redirect = undefined;
      i += op.length;
    } else {
      word = (word ?? "") + c;
      i++;
    }
  }
  endCommand();
  return commands;
}

/** Every simple command of the docs' shell blocks, with where it is written. */
function docCommands(): SimpleCommand[] {
  const commands: SimpleCommand[] = [];
  for (const file of docFiles()) {
    for (const block of fencedBlocks(file)) {
      if (!["sh", "bash", "shell"].includes(block.language)) continue;
      let pending = "";
      block.lines.forEach((line, i) => {
        if (line.endsWith("\\")) {
          pending += line.slice(0, -1) + " ";
          return;
        }
        const text = pending + line;
        pending = "";
        commands.push(...parseShellLine(text, `${file}:${block.line + i}`));
      });
    }
  }
  return commands;
}

// ---------------------------------------------------------------------------------------------
// What the product accepts, read from its own files.
// ---------------------------------------------------------------------------------------------

/** The patterns of each arm of each `case "<subject>" in ... esac` in `text`, by subject. */
function caseArms(text: string): { subject: string; arms: string[] }[] {
  const blocks: { subject: string; arms: string[] }[] = [];
  for (const m of text.matchAll(/\bcase\s+"([^"]+)"\s+in\b/g)) {
    const start = m.index! + m[0].length;
    const end = text.indexOf("esac", start);
    const arms = text
      .slice(start, end)
      .split(";;")
      .map((segment) => segment.replace(/^(\s*#[^\n]*\n)*\s*/, ""))
      .filter((segment) => segment.includes(")"))
      .flatMap((segment) => segment.slice(0, segment.indexOf(")")).split("|"))
      .map((p) => p.trim().replace(/^"(.*)"$/, "$1"))
      .filter((p) => p !== "*");
    blocks.push({ subject: m[1], arms });
  }
  return blocks;
}

/** A shell function's body, from `name() {` to the closing `}` at the start of a line. */
function shellFunction(text: string, name: string): string {
  const start = text.indexOf(`\n${name}() {\n`);
  assert.ok(start >= 0, `no function ${name} in the script`);
  return text.slice(start, text.indexOf("\n}\n", start));
}

const LAB = (() => {
  const script = read("test/lab/lab");
  const dispatch = caseArms(script).filter((b) => b.subject === "${1:-}");
  const [modes, sources] = caseArms(shellFunction(script, "cmd_dns"));
  const [variants] = caseArms(shellFunction(script, "cmd_estate"));
  return {
    subcommands: new Set(dispatch[dispatch.length - 1].arms),
    dnsModes: new Set(modes.arms),
    dnsSources: new Set(sources.arms.filter((a) => a !== "")),
    estateVariants: new Set(variants.arms),
  };
})();

const BENCH = (() => {
  const script = read("bench/run");
  const argumentLoop = caseArms(script).find((b) => b.subject === "$1")!;
  const sources = caseArms(script).find((b) => b.subject === "$SOURCE")!;
  return { arguments: new Set(argumentLoop.arms), sources: new Set(sources.arms) };
})();

const TIERS = new Set(
  /TIERS="\$\{RKE2R_TIERS:-([^}]*)\}"/.exec(read("test/run-tiers"))![1].split(/\s+/),
);

const PACKAGE = JSON.parse(read("package.json")) as { scripts: Record<string, string> };

const TOOLCHAIN_PULUMI_VERSION = /^PULUMI_VERSION=(\S+)$/m.exec(
  read("scripts/toolchain/versions.env"),
)![1];

// ---------------------------------------------------------------------------------------------
// Stack keys.
// ---------------------------------------------------------------------------------------------

/** `rke2.etcdSnapshot.retention`, `nodes[0].ssh.hostKey`, `dns.staticHosts["ai-ear.cn"]` as
 * segments; an index (`[0]`, `[i]`, `[]`) is "[]". */
function keySegments(key: string): string[] {
  const segments: string[] = [];
  for (const m of key.matchAll(/\[("[^"]*"|[^\]]*)\]|([^.[\]]+)/g))
    segments.push(m[2] ?? (m[1].startsWith('"') ? m[1].slice(1, -1) : "[]"));
  return segments;
}

function isList(schema: KeySchema): schema is readonly [KeySchema] {
  return Array.isArray(schema);
}

/** What STACK_CONFIG_KEYS declares at `key`: "setting", "map", "list", or why it has nothing. */
function schemaAt(key: string): "setting" | "map" | "list" | { readonly unknown: string } {
  let schema: KeySchema = STACK_CONFIG_KEYS;
  const segments = keySegments(key);
  for (const [i, segment] of segments.entries()) {
    if (isSetting(schema)) return "setting"; // inside a value: free names, list items
    if (isList(schema)) {
      if (segment !== "[]") return { unknown: `${segments.slice(0, i).join(".")} is a list` };
      schema = schema[0];
    } else {
      const map: KeyMap = schema as KeyMap;
      if (!Object.hasOwn(map, segment))
        return {
          unknown: `${segment} is not a key of ${segments.slice(0, i).join(".") || "the stack"}`,
        };
      schema = map[segment];
    }
  }
  return isSetting(schema) ? "setting" : isList(schema) ? "list" : "map";
}

/** The declaration of the setting at `key` (`a.b`, `list[].c`), or undefined. */
function settingAt(key: string): Setting | undefined {
  let schema: KeySchema = STACK_CONFIG_KEYS;
  for (const segment of keySegments(key)) {
    if (isSetting(schema)) return undefined;
    if (isList(schema)) schema = schema[0];
    else if (Object.hasOwn(schema as KeyMap, segment)) schema = (schema as KeyMap)[segment];
    else return undefined;
  }
  return isSetting(schema) ? schema : undefined;
}

/** Every setting STACK_CONFIG_KEYS declares, as `a.b`, `list[].c`. */
function declaredSettings(schema: KeySchema = STACK_CONFIG_KEYS, at = ""): string[] {
  if (isSetting(schema)) return [at];
  if (isList(schema)) return declaredSettings(schema[0], `${at}[]`);
  return Object.entries(schema as KeyMap).flatMap(([key, inner]) =>
    declaredSettings(inner, at === "" ? key : `${at}.${key}`),
  );
}

const canonicalKey = (key: string) =>
  keySegments(key)
    .map((s, i) => (s === "[]" ? "[]" : i === 0 ? s : `.${s}`))
    .join("");

// ---------------------------------------------------------------------------------------------
// The checks, one function per program; each returns what is wrong.
// ---------------------------------------------------------------------------------------------

/** Flags of `render` / `verify` / `doctor`: the command run with them and --help exits 0 only if accepted. */
function cliProblems(command: "render" | "verify" | "doctor", args: readonly string[]): string[] {
  const r = spawnSync(process.execPath, [path.join(CLI, `${command}.js`), ...args, "--help"], {
    encoding: "utf8",
    timeout: 60000,
  });
  return r.status === 0
    ? []
    : [`npm run ${command} refuses ${args.join(" ")}: ${(r.stderr || r.stdout).split("\n")[0]}`];
}

function labProblems(args: readonly string[]): string[] {
  const [sub, ...rest] = args;
  if (!LAB.subcommands.has(sub))
    return [`test/lab/lab has no subcommand "${sub}" (it has ${[...LAB.subcommands].join(", ")})`];
  switch (sub) {
    case "dns": {
      const [mode, source, ...more] = rest;
      const problems: string[] = [];
      if (!LAB.dnsModes.has(mode)) problems.push(`lab dns has no mode "${mode}"`);
      if (source !== undefined && !LAB.dnsSources.has(source))
        problems.push(`lab dns ${mode} has no source "${source}"`);
      if (more.length > 0) problems.push(`lab dns takes two arguments at most`);
      return problems;
    }
    case "estate":
      return rest.length === 1 && LAB.estateVariants.has(rest[0])
        ? []
        : [`lab estate has no variant "${rest.join(" ")}"`];
    case "reset-node":
    case "nodelocal-loop":
      return rest.length === 1 && /^\d+$/.test(rest[0]) ? [] : [`lab ${sub} takes a host octet`];
    case "exec":
      return rest.length > 0 ? commandProblems({ argv: rest }) : ["lab exec needs a command"];
    default:
      return rest.length === 0 ? [] : [`lab ${sub} takes no arguments`];
  }
}

function benchProblems(args: readonly string[]): string[] {
  const problems: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (!BENCH.arguments.has(args[i])) problems.push(`bench/run takes no argument "${args[i]}"`);
    else if (args[i] === "--source" && !BENCH.sources.has(args[++i]))
      problems.push(`bench/run --source takes ${[...BENCH.sources].join(" or ")}`);
  }
  return problems;
}

/** `npm run policy:pack -- <args>`: run as given, with `--out` in a fresh temporary directory. */
function packProblems(args: readonly string[]): string[] {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "readme-pack-")), "pack");
  const given = args.map((a, i) => (args[i - 1] === "--out" ? out : a));
  const r = spawnSync(process.execPath, [path.join(ROOT, "scripts", "pack-policy.mjs"), ...given], {
    encoding: "utf8",
  });
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
  return r.status === 0
    ? []
    : [`npm run policy:pack refuses ${args.join(" ")}: ${(r.stderr || r.stdout).split("\n")[0]}`];
}

function npmProblems(args: readonly string[]): string[] {
  const [verb, ...rest] = args;
  if (verb === "ci") {
    const prefix = rest.indexOf("--prefix");
    const dir = prefix >= 0 ? rest[prefix + 1] : ".";
    return fs.existsSync(path.join(ROOT, dir, "package-lock.json"))
      ? []
      : [`npm ci --prefix ${dir}: ${dir} has no package-lock.json`];
  }
  const script = verb === "test" ? "test" : verb === "run" ? rest[0] : undefined;
  if (script === undefined) return [`npm ${verb} is not a command this check knows`];
  if (!Object.hasOwn(PACKAGE.scripts, script)) return [`package.json has no script "${script}"`];
  const after = verb === "run" ? rest.slice(1) : rest;
  if (after.length > 0 && after[0] !== "--")
    return [`npm run ${script}: give the script's arguments after --`];
  const scriptArgs = after.slice(1);
  if (script === "render" || script === "verify" || script === "doctor")
    return cliProblems(script, scriptArgs);
  if (script === "lab") return labProblems(scriptArgs);
  if (script === "bench") return benchProblems(scriptArgs);
  if (script === "policy:pack") return packProblems(scriptArgs);
  return scriptArgs.length === 0 ? [] : [`npm run ${script} takes no arguments here`];
}

function bashProblems(args: readonly string[]): string[] {
  const [file, ...rest] = args;
  if (file === "-s") return []; // a script on stdin; its file is checked as a redirection
  if (!fs.existsSync(path.join(ROOT, file)) || !fs.statSync(path.join(ROOT, file)).isFile())
    return [`${file} is not a file of the repository`];
  if (file === "test/lab/lab") return labProblems(rest);
  if (file === "bench/run") return benchProblems(rest);
  return rest.length === 0 ? [] : [`bash ${file} takes no arguments here`];
}

/** `pulumi config set` flags that take a value. */
const CONFIG_SET_VALUE_FLAGS = new Set(["--stack", "-s", "--type", "--config-file", "--cwd", "-C"]);

function configSetProblems(args: readonly string[]): string[] {
  const flags = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--") positional.push(...args.slice(i + 1));
    else if (args[i].startsWith("-")) {
      flags.add(args[i].split("=")[0]);
      if (CONFIG_SET_VALUE_FLAGS.has(args[i])) i++;
    } else positional.push(args[i]);
    if (args[i] === "--") break;
  }
  const [given] = positional;
  if (given === undefined) return ["pulumi config set names no key"];
  // With --path, Pulumi reads the namespace from the path's first segment only (a map key such as
  // ["host:port"] may hold a colon); as the e2e tier's registry case runs it.
  const head = flags.has("--path") ? given.split(/[.[]/)[0] : given;
  const at = head.indexOf(":");
  const [namespace, key] =
    at >= 0 ? [given.slice(0, at), given.slice(at + 1)] : [CONFIG_NAMESPACE, given];
  if (namespace !== CONFIG_NAMESPACE)
    return [`${given} is not in the ${CONFIG_NAMESPACE} namespace`];
  const problems: string[] = [];
  const nested = keySegments(key).length > 1;
  if (nested && !flags.has("--path"))
    problems.push(`${key} is nested: without --path Pulumi stores a top-level key named "${key}"`);
  const found = schemaAt(key);
  if (typeof found === "object")
    problems.push(`${key} is not a stack config key: ${found.unknown}`);
  else if (!nested && found !== "setting")
    problems.push(`${key} is a ${found} of settings; set one of its keys with --path`);
  const secret = (SECRET_KEYS as readonly string[]).includes(key);
  if (secret && !flags.has("--secret"))
    problems.push(
      `${key} is a secret: set it with --secret (stored in plain text it is a config error)`,
    );
  if (!secret && flags.has("--secret"))
    problems.push(
      `${key} is no secret key (${SECRET_KEYS.join(", ")}); the product reads it as plain config`,
    );
  return problems;
}

/** The Pulumi CLI on PATH, else the one the toolchain builds; undefined when neither is there. */
function pulumiBinary(): string | undefined {
  const onPath = (process.env.PATH ?? "")
    .split(path.delimiter)
    .map((dir) => path.join(dir, "pulumi"))
    .find((file) => fs.existsSync(file));
  const cache = process.env.RKE2R_TOOLCHAIN_CACHE ?? "/var/cache/rke2-remediation/toolchain";
  const built = path.join(cache, "bin", "pulumi");
  return onPath ?? (fs.existsSync(built) ? built : undefined);
}

const pulumiHelp = new Map<string, string>();

/** That `pulumi <words>` is a command and takes each long flag, from its --help. */
function pulumiCliProblems(pulumi: string, args: readonly string[]): string[] {
  const words: string[] = [];
  for (const a of args) {
    if (!/^[a-z][a-z-]*$/.test(a)) break;
    words.push(a);
  }
  const key = words.join(" ");
  if (!pulumiHelp.has(key)) {
    const r = spawnSync(pulumi, [...words, "--help"], {
      encoding: "utf8",
      timeout: 60000,
      env: { ...process.env, PULUMI_SKIP_UPDATE_CHECK: "true" },
    });
    pulumiHelp.set(key, r.status === 0 ? r.stdout : "");
  }
  const help = pulumiHelp.get(key)!;
  const usage = /^Usage:\n\s+pulumi ((?:[a-z][a-z-]* ?)*)/m.exec(help);
  if (!usage) return [`pulumi ${key} --help failed`];
  const command = usage[1].trim().split(" ").filter(Boolean);
  const aliases = (/^Aliases:\n\s+(.*)$/m.exec(help)?.[1] ?? "").split(/,\s*/);
  const names = (word: string, i: number) =>
    word === command[i] || (i === command.length - 1 && aliases.includes(word));
  if (command.length === 0 || !command.every((_, i) => names(words[i] ?? "", i)))
    return [`pulumi has no command "${key}"`];
  if (/^\s+pulumi .*\[command\]$/m.test(help))
    return [`pulumi ${command.join(" ")} needs a subcommand`];
  const flags = args.filter((a) => /^--[a-z]/.test(a)).map((a) => a.split("=")[0]);
  return flags
    .filter((f) => !new RegExp(`(^|\\s)${f}[\\s=]`, "m").test(help))
    .map((f) => `pulumi ${command.join(" ")} has no flag ${f}`);
}

/** Repository paths read by a redirection (`< components/x.sh`) must exist. */
function inputProblems(inputs: readonly string[]): string[] {
  const top = new Set(fs.readdirSync(ROOT));
  return inputs
    .filter((file) => top.has(file.split("/")[0]) && file.includes("/"))
    .filter((file) => !fs.existsSync(path.join(ROOT, file)))
    .map((file) => `${file} is not a file of the repository`);
}

function commandProblems(command: Pick<SimpleCommand, "argv"> & Partial<SimpleCommand>): string[] {
  const [program, ...args] = command.argv;
  const problems = inputProblems(command.inputs ?? []);
  const tiers = command.assignments?.get("RKE2R_TIERS");
  if (tiers !== undefined)
    for (const tier of tiers.split(/\s+/).filter(Boolean))
      if (!TIERS.has(tier)) problems.push(`test/run-tiers has no tier "${tier}"`);
  if (program === "npm") return [...problems, ...npmProblems(args)];
  if (program === "bash") return [...problems, ...bashProblems(args)];
  if (program === "pulumi")
    return args[0] === "config" && args[1] === "set"
      ? [...problems, ...configSetProblems(args.slice(2))]
      : problems;
  if (program === "sh" && args.includes("--version")) {
    const version = args[args.indexOf("--version") + 1];
    if (version !== TOOLCHAIN_PULUMI_VERSION)
      problems.push(
        `installs Pulumi ${version}; the project is built with ${TOOLCHAIN_PULUMI_VERSION} (scripts/toolchain/versions.env)`,
      );
  }
  if (!EXTERNAL_PROGRAMS.has(program))
    problems.push(`"${program}" is neither a product command nor one of EXTERNAL_PROGRAMS`);
  return problems;
}

/** `pulumi ...` commands, including those `lab exec` runs. */
function pulumiCommands(commands: readonly SimpleCommand[]): SimpleCommand[] {
  return commands.flatMap((c) => {
    const argv = c.argv[0] === "npm" && c.argv[2] === "lab" ? c.argv.slice(5) : c.argv;
    const exec = c.argv[0] === "bash" && c.argv[1] === "test/lab/lab" ? c.argv.slice(3) : argv;
    return exec[0] === "pulumi" ? [{ ...c, argv: exec }] : [];
  });
}

describe("commands in README.md and docs/*.md", function () {
  this.timeout(120000);
  const commands = docCommands();

  it("finds the commands it checks", () => {
    const programs = new Set(commands.map((c) => c.argv[0]));
    for (const program of ["npm", "bash", "pulumi"])
      assert.ok(programs.has(program), `no ${program} command found in the docs' shell blocks`);
    assert.ok(commands.some((c) => c.argv.join(" ").startsWith("npm run verify -- --stack")));
    assert.ok(commands.some((c) => c.argv.join(" ").startsWith("pulumi config set --secret")));
  });

  for (const command of commands) {
    it(`${command.where}: ${command.argv.join(" ")}`, () => {
      assert.deepEqual(commandProblems(command), []);
    });
  }

  it("every pulumi command exists and takes its flags (the Pulumi CLI's --help)", function () {
    const pulumi = pulumiBinary();
    if (!pulumi) {
      assert.notEqual(process.env.CI, "true", "the Pulumi CLI is missing under CI=true");
      this.skip();
    }
    const problems = pulumiCommands(commands).flatMap((c) =>
      pulumiCliProblems(pulumi!, c.argv.slice(1)).map((p) => `${c.where}: ${p}`),
    );
    assert.deepEqual(problems, []);
  });
});

describe("stack files in README.md and docs/*.md", function () {
  this.timeout(120000);
  const stacks = docFiles()
    .flatMap(fencedBlocks)
    .filter((b) => b.language === "yaml" && b.lines[0]?.startsWith("config:"));

  it("finds the README's stack file", () => {
    assert.ok(stacks.some((s) => s.file === "README.md"));
  });

  for (const stack of stacks) {
    it(`${stack.file}:${stack.line} passes npm run verify`, () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-doc-stack-"));
      const file = path.join(dir, "Pulumi.doc.yaml");
      fs.writeFileSync(file, stack.lines.join("\n") + "\n");
      const r = spawnSync(
        process.execPath,
        [path.join(CLI, "verify.js"), "--stack", "doc", "--file", file, "--json"],
        { encoding: "utf8", timeout: 120000 },
      );
      fs.rmSync(dir, { recursive: true, force: true });
      const report = JSON.parse(r.stdout) as {
        configProblems: { key: string; message: string }[];
        violations: { policy: string; level: string; message: string }[];
      };
      assert.deepEqual(report.configProblems, []);
      assert.deepEqual(
        report.violations.filter((v) => v.level === "mandatory"),
        [],
      );
      assert.equal(r.status, 0, r.stderr);
    });
  }
});

describe("stack config keys in README.md and docs/*.md", () => {
  const REFERENCE = "docs/configuration.md";

  /**
   * The keys of the reference table's first column, `.x` expanded to the sibling of the first,
   * each with its row's last cell (the default), `\|` read as `|`.
   */
  function referenceKeys(): { key: string; line: number; defaultCell: string }[] {
    const lines = read(REFERENCE).split("\n");
    const start = lines.indexOf("## Keys");
    assert.ok(start >= 0, `${REFERENCE} has no section "## Keys"`);
    const keys: { key: string; line: number; defaultCell: string }[] = [];
    for (let i = start + 1; i < lines.length && !lines[i].startsWith("## "); i++) {
      const cell = /^\|([^|]*)\|/.exec(lines[i])?.[1] ?? "";
      const named = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
      if (named.length === 0) continue;
      const cells = lines[i].split(/(?<!\\)\|/);
      const defaultCell = (cells[cells.length - 2] ?? "").replace(/\\\|/g, "|");
      const first = named[0];
      const base = first.slice(0, Math.max(first.lastIndexOf("."), 0));
      for (const k of named)
        keys.push({
          key: canonicalKey(k.startsWith(".") ? base + k : k),
          line: i + 1,
          defaultCell,
        });
    }
    return keys;
  }

  it(`the table of ${REFERENCE} lists every setting STACK_CONFIG_KEYS declares, once`, () => {
    const listed = referenceKeys().map((k) => k.key);
    const missing = declaredSettings().filter((k) => !listed.includes(k));
    const twice = listed.filter((k, i) => listed.indexOf(k) !== i);
    assert.deepEqual({ missing, twice }, { missing: [], twice: [] });
  });

  it(`the table of ${REFERENCE} lists no key STACK_CONFIG_KEYS lacks`, () => {
    const wrong = referenceKeys()
      .filter(({ key }) => schemaAt(key) !== "setting")
      .map(({ key, line }) => `${REFERENCE}:${line} ${key}`);
    assert.deepEqual(wrong, []);
  });

  it(`the table of ${REFERENCE} gives every default the declaration gives`, () => {
    const wrong: string[] = [];
    for (const { key, line, defaultCell } of referenceKeys()) {
      const fallback = settingAt(key)?.json.default;
      if (fallback === undefined) continue;
      // A downstream cluster's settings are the management cluster's, defaults included.
      const written = /as under `rke2`/.test(defaultCell)
        ? (referenceKeys().find(
            (k) => k.key === key.replace(/^rancher\.downstreamClusters\[\]/, "rke2"),
          )?.defaultCell ?? "")
        : defaultCell;
      // A list is written as its items, separated by ", ".
      const shown = Array.isArray(fallback) ? fallback.join(", ") : String(fallback);
      if (!written.includes(shown))
        wrong.push(`${REFERENCE}:${line} ${key}: the default is ${JSON.stringify(fallback)}`);
    }
    assert.deepEqual(wrong, []);
  });

  it("every stack key an inline code span names exists", () => {
    const tops = Object.keys(STACK_CONFIG_KEYS).join("|");
    // A file name such as rke2.linux-amd64.tar.gz is no key: a key segment is not followed by "-".
    const spanKey = new RegExp(
      `^(?:${tops})(?:\\.[A-Za-z][A-Za-z0-9]*|\\[[^\\]]*\\])+(?![-A-Za-z0-9])`,
    );
    const wrong: string[] = [];
    for (const file of docFiles()) {
      const text = read(file).replace(/^\s*```[\s\S]*?^\s*```/gm, (block) =>
        block.replace(/[^\n]/g, " "),
      );
      text.split("\n").forEach((line, i) => {
        for (const m of line.matchAll(/`([^`]+)`/g)) {
          const key = spanKey.exec(m[1])?.[0];
          if (key === undefined) continue;
          const found = schemaAt(key);
          if (typeof found === "object") wrong.push(`${file}:${i + 1} ${key}: ${found.unknown}`);
        }
      });
    }
    assert.deepEqual(wrong, []);
  });
});
