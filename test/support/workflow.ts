/**
 * Runs a GitHub Actions workflow of this repository the way a runner would, on this machine:
 * each job in `needs` order, each matrix entry, each `run:` step with bash (`set -eo pipefail`,
 * as a runner's default shell), the job's and step's `env`, `$GITHUB_OUTPUT` for step outputs,
 * `$RUNNER_TEMP`, a step's `if:`, and `${{ }}` expressions over `secrets`, `vars`, `inputs`,
 * `matrix`, `needs`, `steps` and `runner`. The actions it uses are the lab's:
 * - `actions/checkout` is the working tree given;
 * - `actions/setup-node` the Node.js running this, whose major must be the `node-version` asked,
 *   with its `node-version` output (with `cache: npm`, this machine's npm cache, which later
 *   steps' npm then reads offline: the lab's operator namespace reaches no registry);
 * - `actions/cache` a cache of this process, shared by every run in it, as a repository's cache
 *   is shared by its workflow runs (actions/cache@v4.3.0): a key found restores its paths and sets
 *   `cache-hit` to `true` (README.md, "Skipping steps based on cache-hit"), a key not found sets
 *   it to `false` (src/restoreImpl.ts); after the job's steps, a job that succeeded and did not
 *   hit saves the paths that exist under the key (action.yml `post-if: success()`,
 *   src/saveImpl.ts);
 * - `pulumi/actions` the Pulumi CLI on PATH, whose version must be the one the step pins.
 * Any other action fails the run, so a workflow cannot gain a step this runner skips.
 *
 * Expressions: property access, `fromJSON(...)`, `hashFiles(...)`, string literals, `||` and
 * `!=`/`==`, the forms the workflows use; anything else fails the run naming the expression.
 */
import { spawnSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";

export interface WorkflowContext {
  readonly secrets?: Readonly<Record<string, string>>;
  readonly vars?: Readonly<Record<string, string>>;
  readonly inputs?: Readonly<Record<string, string>>;
}

export interface StepRun {
  readonly job: string;
  readonly matrix: Readonly<Record<string, unknown>>;
  readonly step: string;
  readonly status: number;
  readonly out: string;
}

export interface WorkflowRun {
  /** Every step run, in order; a failed step ends its job, and jobs needing it do not run. */
  readonly steps: readonly StepRun[];
  readonly ok: boolean;
}

interface Step {
  id?: string;
  name?: string;
  if?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}

interface Job {
  needs?: string | string[];
  strategy?: { matrix?: Record<string, unknown> };
  env?: Record<string, string>;
  outputs?: Record<string, string>;
  steps: Step[];
}

type Scope = Record<string, unknown>;

/** Evaluates one `${{ }}` expression's text. */
function evaluate(expr: string, scope: Scope): unknown {
  const text = expr.trim();
  const or = splitTopLevel(text, "||");
  if (or.length > 1) {
    for (const part of or) {
      const value = evaluate(part, scope);
      if (value !== undefined && value !== "" && value !== null && value !== false) return value;
    }
    return evaluate(or[or.length - 1], scope);
  }
  for (const op of ["!=", "=="]) {
    const sides = splitTopLevel(text, op);
    if (sides.length === 2) {
      const [left, right] = sides.map((side) => String(evaluate(side, scope)).toLowerCase());
      return op === "==" ? left === right : left !== right;
    }
  }
  const literal = /^'((?:[^']|'')*)'$/.exec(text);
  if (literal) return literal[1].replace(/''/g, "'");
  const call = /^fromJSON\((.*)\)$/.exec(text);
  if (call) {
    const arg = evaluate(call[1], scope);
    return typeof arg === "string" ? JSON.parse(arg) : arg;
  }
  const hash = /^hashFiles\((.*)\)$/.exec(text);
  if (hash)
    return hashFiles(
      splitTopLevel(hash[1], ",").map((a) => String(evaluate(a, scope))),
      scope,
    );
  if (/^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/.test(text)) {
    let value: unknown = scope;
    for (const key of text.split(".")) value = (value as Scope | undefined)?.[key];
    return value ?? "";
  }
  throw new Error(`the workflow runner cannot evaluate \${{ ${text} }}`);
}

function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === "(") depth++;
    else if (!quoted && c === ")") depth--;
    else if (!quoted && depth === 0 && text.startsWith(separator, i)) {
      parts.push(text.slice(start, i));
      start = i + separator.length;
      i += separator.length - 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** A string with every `${{ }}` replaced; a string that is one expression keeps its value's type. */
function interpolate(value: unknown, scope: Scope): unknown {
  if (typeof value !== "string") return value;
  const whole = /^\$\{\{(.*)\}\}$/s.exec(value.trim());
  if (whole) return evaluate(whole[1], scope);
  return value.replace(/\$\{\{(.*?)\}\}/g, (_m, expr: string) => {
    const v = evaluate(expr, scope);
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

function envOf(block: Record<string, string> | undefined, scope: Scope): Record<string, string> {
  return Object.fromEntries(
    Object.entries(block ?? {}).map(([k, v]) => [k, String(interpolate(v, scope) ?? "")]),
  );
}

function matrixEntries(job: Job, scope: Scope): Record<string, unknown>[] {
  const matrix = job.strategy?.matrix;
  if (!matrix) return [{}];
  let entries: Record<string, unknown>[] = [{}];
  for (const [key, raw] of Object.entries(matrix)) {
    const values = interpolate(raw, scope);
    if (!Array.isArray(values))
      throw new Error(`matrix.${key} is not a list: ${JSON.stringify(values)}`);
    entries = entries.flatMap((e) => values.map((v) => ({ ...e, [key]: v })));
  }
  return entries;
}

/** `key=value` lines (and `key<<EOF` blocks) of a $GITHUB_OUTPUT file. */
function readOutputs(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n") : [];
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([\w-]+)<<(.+)$/.exec(lines[i]);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2], i + 1);
      out[heredoc[1]] = lines.slice(i + 1, end).join("\n");
      i = end;
    } else if (lines[i].includes("=")) {
      const at = lines[i].indexOf("=");
      out[lines[i].slice(0, at)] = lines[i].slice(at + 1);
    }
  }
  return out;
}

/**
 * `hashFiles(...)` over files named relative to the workspace (no wildcards: the workflows name
 * lock files): a SHA-256 of the files' own SHA-256s, `""` when none exists, as GitHub's function
 * answers an empty match.
 */
function hashFiles(files: string[], scope: Scope): string {
  const workspace = String((scope.github as Scope | undefined)?.workspace ?? "");
  const found = files.map((f) => {
    if (/[*?[\]]/.test(f))
      throw new Error(`the workflow runner's hashFiles takes no wildcard: ${f}`);
    return path.join(workspace, f);
  });
  const existing = found.filter((f) => fs.existsSync(f));
  if (existing.length === 0) return "";
  const all = crypto.createHash("sha256");
  for (const f of existing)
    all.update(crypto.createHash("sha256").update(fs.readFileSync(f)).digest());
  return all.digest("hex");
}

/** A cache of `actions/cache` entries that lasts as long as this process. */
let cacheRoot: string | undefined;

/**
 * The entry of a key and its paths as the step writes them (not where they resolve), as
 * actions/cache's version of an entry is: the same key with other paths is another entry.
 */
function cacheEntry({ key, written }: CacheStep): string {
  if (cacheRoot === undefined) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-runner-cache-"));
    process.on("exit", () => fs.rmSync(root, { recursive: true, force: true }));
    cacheRoot = root;
  }
  const id = crypto
    .createHash("sha256")
    .update(JSON.stringify([key, written]))
    .digest("hex");
  return path.join(cacheRoot, id);
}

/** An `actions/cache` step: its key, and its paths as written and as they resolve. */
interface CacheStep {
  readonly key: string;
  readonly written: readonly string[];
  /** `~` is the runner's home; any other path is the workspace's. */
  readonly paths: readonly string[];
}

function cacheStep(step: Step, env: NodeJS.ProcessEnv, workdir: string): CacheStep {
  const written = String(step.with?.path ?? "")
    .split("\n")
    .map((p) => p.trim())
    .filter(Boolean);
  const paths = written.map((p) =>
    p.startsWith("~/") ? path.join(env.HOME ?? os.homedir(), p.slice(2)) : path.resolve(workdir, p),
  );
  return { key: String(step.with?.key ?? ""), written, paths };
}

function copyTree(from: string, to: string): void {
  fs.rmSync(to, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(to), { recursive: true });
  const r = spawnSync("cp", ["-a", from, to], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`cp -a ${from} ${to}: ${r.stderr}`);
}

function restoreCache(cache: CacheStep): boolean {
  const entry = cacheEntry(cache);
  if (!fs.existsSync(entry)) return false;
  cache.paths.forEach((p, i) => {
    if (fs.existsSync(path.join(entry, `${i}`))) copyTree(path.join(entry, `${i}`), p);
  });
  return true;
}

/** Saves the paths that exist; with none, nothing is saved (actions/cache warns and goes on). */
function saveCache(cache: CacheStep): void {
  if (!cache.paths.some((p) => fs.existsSync(p))) return;
  const entry = cacheEntry(cache);
  const partial = `${entry}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  cache.paths.forEach((p, i) => {
    if (fs.existsSync(p)) copyTree(p, path.join(partial, `${i}`));
  });
  fs.renameSync(partial, entry);
}

interface ActionRun {
  readonly status: number;
  readonly out: string;
  readonly env?: Record<string, string>;
  readonly outputs?: Record<string, string>;
  /** A save that runs after the job's steps, when the job succeeded. */
  readonly save?: CacheStep;
}

/**
 * What the lab provides for an action, and the environment and outputs it leaves later steps; an
 * error names an action it cannot stand for.
 */
function useAction(step: Step, env: NodeJS.ProcessEnv, workdir: string): ActionRun {
  const action = step.uses ?? "";
  if (/^actions\/checkout@/.test(action)) return { status: 0, out: `${action}: provided` };
  if (/^actions\/setup-node@/.test(action)) {
    const cached = step.with?.cache === "npm";
    const wanted = step.with?.["node-version"];
    const major = process.versions.node.split(".")[0];
    if (wanted !== undefined && String(wanted).split(".")[0] !== major)
      return {
        status: 1,
        out: `${action} asks for node ${wanted}, the Node.js running it is ${process.version}`,
      };
    return {
      status: 0,
      out: `${action}: node ${process.version}${cached ? ", npm cache of this machine" : ""}`,
      outputs: { "node-version": process.version },
      ...(cached ? { env: { npm_config_offline: "true" } } : {}),
    };
  }
  if (/^actions\/cache@/.test(action)) {
    const cache = cacheStep(step, env, workdir);
    if (cache.key === "" || cache.paths.length === 0)
      return { status: 1, out: `${action}: the inputs path and key are required` };
    if (restoreCache(cache))
      return {
        status: 0,
        out: `${action}: cache restored from key: ${cache.key}`,
        outputs: { "cache-hit": "true" },
      };
    return {
      status: 0,
      out: `${action}: cache not found for input keys: ${cache.key}`,
      outputs: { "cache-hit": "false" },
      save: cache,
    };
  }
  if (/^pulumi\/actions@/.test(action)) {
    const wanted = step.with?.["pulumi-version"];
    const r = spawnSync("pulumi", ["version"], { encoding: "utf8", env });
    const found = (r.stdout ?? "").trim().replace(/^v/, "");
    if (r.status !== 0) return { status: 1, out: `pulumi version failed: ${r.stderr}` };
    if (wanted !== undefined && String(wanted) !== found)
      return { status: 1, out: `${action} pins pulumi ${wanted}, the CLI on PATH is ${found}` };
    return { status: 0, out: `${action}: pulumi ${found} on PATH` };
  }
  throw new Error(`the workflow runner has no stand-in for the action ${action}`);
}

/**
 * Runs `workflowFile` in `workdir` (a checkout of the repository). `env` is the machine's
 * environment the runner starts from (PATH with the lab's CLI, its network namespace).
 */
export function runWorkflow(
  workflowFile: string,
  workdir: string,
  context: WorkflowContext,
  env: NodeJS.ProcessEnv = process.env,
): WorkflowRun {
  const doc = YAML.parse(fs.readFileSync(workflowFile, "utf8")) as { jobs: Record<string, Job> };
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-runner-"));
  const steps: StepRun[] = [];
  const done = new Map<string, { result: string; outputs: Record<string, string> }>();
  const pending = new Map(Object.entries(doc.jobs));
  try {
    while (pending.size > 0) {
      const ready = [...pending].find(([, job]) =>
        [job.needs ?? []].flat().every((n) => done.has(n)),
      );
      if (!ready)
        throw new Error(`jobs ${[...pending.keys()].join(", ")} need a job that never runs`);
      const [name, job] = ready;
      pending.delete(name);
      const needs = Object.fromEntries([job.needs ?? []].flat().map((n) => [n, done.get(n)!]));
      if (Object.values(needs).some((n) => n.result !== "success")) {
        done.set(name, { result: "skipped", outputs: {} });
        continue;
      }
      const base: Scope = {
        github: { workspace: workdir },
        runner: { os: "Linux", temp },
        secrets: context.secrets ?? {},
        vars: context.vars ?? {},
        inputs: context.inputs ?? {},
        needs,
      };
      let result = "success";
      let outputs: Record<string, string> = {};
      for (const matrix of matrixEntries(job, base)) {
        const stepOutputs: Record<string, { outputs: Record<string, string> }> = {};
        const scope: Scope = { ...base, matrix, steps: stepOutputs };
        const jobEnv = envOf(job.env, scope);
        let provided: Record<string, string> = {};
        const saves: CacheStep[] = [];
        let entryResult = "success";
        for (const [i, step] of job.steps.entries()) {
          // A step's `if:` is an expression with or without its `${{ }}`.
          if (step.if !== undefined) {
            const condition = step.if.trim().replace(/^\$\{\{(.*)\}\}$/s, "$1");
            if (!evaluate(condition, scope)) continue;
          }
          const outputFile = path.join(temp, `output-${name}-${steps.length}`);
          const stepEnv: NodeJS.ProcessEnv = {
            ...env,
            ...provided,
            ...jobEnv,
            ...envOf(step.env, scope),
            CI: "true",
            GITHUB_ACTIONS: "true",
            GITHUB_OUTPUT: outputFile,
            GITHUB_WORKSPACE: workdir,
            RUNNER_TEMP: temp,
          };
          let ran: { status: number; out: string };
          let actionOutputs: Record<string, string> = {};
          if (step.run !== undefined) {
            const script = String(interpolate(step.run, scope));
            const r = spawnSync(
              "bash",
              ["--noprofile", "--norc", "-eo", "pipefail", "-c", script],
              {
                cwd: workdir,
                encoding: "utf8",
                env: stepEnv,
                timeout: 900000,
                maxBuffer: 64 * 1024 * 1024,
              },
            );
            ran = { status: r.status ?? -1, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
          } else {
            const withValues = Object.fromEntries(
              Object.entries(step.with ?? {}).map(([k, v]) => [k, interpolate(v, scope)]),
            );
            const used = useAction({ ...step, with: withValues }, stepEnv, workdir);
            provided = { ...provided, ...used.env };
            actionOutputs = used.outputs ?? {};
            if (used.save) saves.push(used.save);
            ran = { status: used.status, out: used.out };
          }
          if (step.id)
            stepOutputs[step.id] = { outputs: { ...readOutputs(outputFile), ...actionOutputs } };
          steps.push({
            job: name,
            matrix,
            step: step.name ?? step.id ?? step.uses ?? (step.run ?? "").split("\n")[0] ?? `${i}`,
            ...ran,
          });
          if (ran.status !== 0) {
            entryResult = result = "failure";
            break;
          }
        }
        // The caches' post steps: only a job that succeeded saves.
        if (entryResult === "success") saves.forEach(saveCache);
        outputs = Object.fromEntries(
          Object.entries(job.outputs ?? {}).map(([k, v]) => [k, String(interpolate(v, scope))]),
        );
      }
      done.set(name, { result, outputs });
    }
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
  return { steps, ok: [...done.values()].every((j) => j.result === "success") };
}

/**
 * A checkout of the repository as `actions/checkout` gives one: every file git tracks or would
 * track (the working tree's, uncommitted changes included), without node_modules, bin/ or any
 * other ignored file, in a new directory.
 */
export function checkoutOf(repo: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-checkout-"));
  const r = spawnSync("git", ["-C", repo, "ls-files", "-co", "--exclude-standard", "-z"], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`git ls-files failed: ${r.stderr}`);
  for (const file of r.stdout.split("\0").filter(Boolean)) {
    const from = path.join(repo, file);
    if (!fs.existsSync(from)) continue;
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, file));
    fs.chmodSync(path.join(dir, file), fs.statSync(from).mode & 0o777);
  }
  return dir;
}
