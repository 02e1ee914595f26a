/** The real Pulumi CLI on the lab's stack, as the e2e tier runs it (inside the operator namespace). */
import * as assert from "assert/strict";
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { LAB_DIR, LAB_STACK, REPO, run } from "../real/lab";

export function pulumi(...args: string[]): { status: number; out: string } {
  return pulumiOn(LAB_STACK, args);
}

/** The real Pulumi CLI on `stack`; `input` goes to its standard input (a secret's value). */
export function pulumiOn(
  stack: string,
  args: readonly string[],
  input?: string,
): { status: number; out: string } {
  return pulumiIn(REPO, stack, args, input);
}

/**
 * The project's tree at an earlier `commit`, read from git history (a clean clone has it), in a
 * new directory under the lab's, with this checkout's npm dependencies (the same lock file).
 */
export function treeAt(commit: string): string {
  const dir = fs.mkdtempSync(path.join(LAB_DIR, `tree-${commit}-`));
  const tar = run("bash", ["-c", `git -C ${REPO} archive ${commit} | tar -x -C ${dir}`]);
  assert.equal(tar.status, 0, `cannot read ${commit} from git history: ${tar.stderr}`);
  fs.symlinkSync(path.join(REPO, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

/** The same in another checkout of the project (`dir`): an earlier release's tree, say. */
export function pulumiIn(
  dir: string,
  stack: string,
  args: readonly string[],
  input?: string,
): { status: number; out: string } {
  const r = spawnSync(
    "pulumi",
    [...args, "--stack", stack, "--non-interactive", "--color", "never"],
    {
      cwd: dir,
      encoding: "utf8",
      timeout: 540000,
      // (A stack export of the previous release's state is larger than spawnSync's 1 MiB default.)
      maxBuffer: 256 * 1024 * 1024,
      input,
      env: { ...process.env, PULUMI_NODEJS_TRANSPILE_ONLY: "true" },
    },
  );
  return { status: r.status ?? -1, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/**
 * The real Pulumi CLI on `stack` in this checkout, not waiting: the caller can look at the
 * machine meanwhile (its processes' command lines, say).
 */
export function pulumiAsync(
  stack: string,
  args: readonly string[],
): Promise<{ status: number; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      "pulumi",
      [...args, "--stack", stack, "--non-interactive", "--color", "never"],
      { cwd: REPO, env: { ...process.env, PULUMI_NODEJS_TRANSPILE_ONLY: "true" } },
    );
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("close", (status) => resolve({ status: status ?? -1, out }));
  });
}

export { digA } from "../real/lab";
