import * as crypto from "crypto";
import { componentFile } from "../assets";
import { shellQuote } from "./shell-quote";

/** Where the host keeps one lock file per resource (tmpfs: a reboot ends every run anyway). */
export const HOST_LOCK_DIR = "/run/lock/rke2-remediation";

/** The wrapper that runs on the host; see its header for the lock and the time bound. */
const HOST_STEP_SCRIPT = componentFile(__dirname, "host-step.sh");

/** The markers host-step.sh writes to stderr; they are never echoed into the Pulumi log. */
export const HOST_STEP_MARKER = "rke2-remediation-step: ";
const LOCK_BUSY_EXIT = 75;

/** How long each party waits, derived from the caller's bound for the step. */
export interface HostStepBounds {
  /** How long the host waits for another run's lock before giving up. */
  readonly lockWaitSeconds: number;
  /** How long the script may run on the host before `timeout` sends SIGTERM. */
  readonly scriptSeconds: number;
  /** SIGKILL follows SIGTERM after this many seconds (`timeout -k`). */
  readonly killAfterSeconds: number;
  /** The client's own bound, a backstop that fires only when the host did not answer in time. */
  readonly clientBoundMs: number;
}

const KILL_AFTER_SECONDS = 2;
/** Time for SIGKILL's grace, the exit status's trip back and the session's teardown. */
const HOST_FIRST_SECONDS = KILL_AFTER_SECONDS + 3;
const MAX_LOCK_WAIT_SECONDS = 30;

/**
 * The host stops the script a few seconds before the caller's bound, so the client sees the
 * host's verdict; the client's timer stays as a backstop after the lock wait and that bound.
 */
export function hostStepBounds(timeoutMs: number): HostStepBounds {
  const seconds = Math.floor(timeoutMs / 1000);
  const scriptSeconds = Math.max(1, seconds - HOST_FIRST_SECONDS);
  const lockWaitSeconds = Math.min(MAX_LOCK_WAIT_SECONDS, Math.max(1, Math.floor(seconds / 4)));
  return {
    lockWaitSeconds,
    scriptSeconds,
    killAfterSeconds: KILL_AFTER_SECONDS,
    clientBoundMs:
      lockWaitSeconds * 1000 + Math.max(timeoutMs, (scriptSeconds + HOST_FIRST_SECONDS) * 1000),
  };
}

const LOCK_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

/**
 * The lock file for one resource's steps: the explicit lock name, or one derived from the label
 * ("node sza122020.local" -> "node-sza122020.local.lock"). Runs with the same lock on the same
 * host never overlap.
 */
export function lockFileName(label: string, lockName?: string): string {
  if (lockName !== undefined) {
    if (!LOCK_NAME.test(lockName)) {
      throw new Error(
        `lock name "${lockName}" is not a safe file name; use letters, digits, "_", "." and "-", ` +
          `at most 100 characters, not starting with "." or "-".`,
      );
    }
    return `${lockName}.lock`;
  }
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, "-")
    .replace(/^[.-]+/, "")
    .replace(/-+$/, "");
  // (Two labels that differ only in replaced characters share a lock: their runs only queue.)
  if (safe.length > 0 && safe.length <= 100) return `${safe}.lock`;
  // A long label is cut: a short digest of it keeps labels with a common prefix apart.
  const digest = crypto.createHash("sha256").update(label).digest("hex").slice(0, 8);
  return `${safe.slice(0, 90) || "step"}-${digest}.lock`;
}

/**
 * The command the host runs: host-step.sh as `bash -c` text with the lock and bounds as its
 * arguments. The script and its parameters are not in it: they arrive on stdin.
 */
export function hostStepCommand(
  lockFile: string,
  bounds: HostStepBounds,
  lockDir: string = HOST_LOCK_DIR,
): string {
  return [
    "bash",
    "-c",
    shellQuote(HOST_STEP_SCRIPT),
    "rke2-remediation-step",
    shellQuote(lockDir),
    shellQuote(lockFile),
    String(bounds.lockWaitSeconds),
    String(bounds.scriptSeconds),
    String(bounds.killAfterSeconds),
  ].join(" ");
}

/** What host-step.sh reported: another run held the lock, the host stopped the script, or neither. */
export type HostStepOutcome =
  | { readonly kind: "lock-busy"; readonly lockFile: string }
  | { readonly kind: "timed-out" }
  | { readonly kind: "finished" };

export function hostStepOutcome(result: {
  readonly exitCode: number;
  readonly stderr: string;
}): HostStepOutcome {
  // (A marker may follow a script's last stderr output on the same line.)
  const markers = result.stderr
    .split("\n")
    .filter((l) => l.includes(HOST_STEP_MARKER))
    .map((l) => l.slice(l.indexOf(HOST_STEP_MARKER) + HOST_STEP_MARKER.length));
  const busy = markers.find((m) => m.startsWith("lock busy "));
  if (result.exitCode === LOCK_BUSY_EXIT && busy !== undefined) {
    return { kind: "lock-busy", lockFile: busy.slice("lock busy ".length) };
  }
  if (
    (result.exitCode === 124 || result.exitCode === 137) &&
    markers.some((m) => m.startsWith("timed out "))
  ) {
    return { kind: "timed-out" };
  }
  return { kind: "finished" };
}
