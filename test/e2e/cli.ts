/** The real Pulumi CLI on the lab's stack, as the e2e tier runs it (inside the operator namespace). */
import { spawnSync } from "child_process";
import { LAB_STACK, REPO } from "../real/lab";

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

export { digA } from "../real/lab";
