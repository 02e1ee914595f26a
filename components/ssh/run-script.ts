import * as fs from "fs";
import { Client } from "ssh2";
import type { SshEndpoint } from "../model";
import {
  blobOfKeyLine,
  fingerprintOfBlob,
  fingerprintOfKeyLine,
  hostKeyAlgorithms,
} from "./host-key";
import {
  HOST_STEP_MARKER,
  hostStepBounds,
  hostStepCommand,
  hostStepOutcome,
  lockFileName,
} from "./host-step";
import { type HostKeyState, privateKeyFor } from "./host-material";
import { scriptText } from "../assets";
import { shellQuote } from "./shell-quote";

export { shellQuote };

/** Where and how to reach a host: its pinned endpoint and the private key, a secret that never
 * appears in messages. */
export type SshConnection = SshEndpoint & { readonly privateKey: string };

/** Just the endpoint's four fields, so a resource's state never carries more than its pin. */
export function pinnedEndpoint(ssh: SshEndpoint): SshEndpoint {
  return { host: ssh.host, port: ssh.port, user: ssh.user, hostKey: ssh.hostKey };
}

export interface ScriptResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunScriptOptions {
  /** Variables set before the script runs, as `NAME='value'` lines. */
  readonly params?: Readonly<Record<string, string>>;
  /** Bound for connecting (ms). */
  readonly connectTimeoutMs?: number;
  /** Bound for the whole script (ms). When it passes, the session is closed; without a pty the
   * host's shell is not told, so the script may still run there (runHostScript stops it). */
  readonly timeoutMs?: number;
  /** Called with each complete stderr line, for progress in the Pulumi log. */
  readonly onProgress?: (line: string) => void;
  /** Cuts the session when aborted, as a dropped connection would. */
  readonly signal?: AbortSignal;
  /** The command the host runs, reading the script from its stdin (default `bash -s`). It shows
   * in the host's process list: never put the script or a parameter in it. */
  readonly command?: string;
  /** What the command reads on stdin instead of the script (a file copied to the host). */
  readonly stdin?: () => NodeJS.ReadableStream;
}

/**
 * An SSH failure. A plain Error, not a subclass: dynamic providers run this code after Pulumi's
 * closure serializer has rewritten it, and a serialized Error subclass loses its message.
 */
export function sshError(message: string): Error {
  const err = new Error(message);
  err.name = "SshError";
  return err;
}

/** The reason a script gave for failing: its last "error: ..." line, else its last stderr line. */
export function failureReason(result: ScriptResult): string {
  const lines = result.stderr.trim().split("\n").filter(Boolean);
  const error = [...lines].reverse().find((l) => l.startsWith("error: "));
  return (error ?? lines.pop() ?? `exit code ${result.exitCode}`).replace(/^error: /, "");
}

/** The exact text a host's bash reads: parameter assignments, then the script. */
export function scriptWithParams(script: string, params: Readonly<Record<string, string>>): string {
  const preamble = Object.entries(params)
    .map(([name, value]) => `${name}=${shellQuote(value)}`)
    .join("\n");
  return `${preamble}\n${script}\n`;
}

/**
 * Runs one bash script on a host in one SSH session: the script arrives on stdin, so nothing
 * of it (or of its parameters) shows in the host's process list or in any log line here.
 */
export function runScript(
  conn: SshConnection,
  script: string,
  options: RunScriptOptions = {},
): Promise<ScriptResult> {
  const where = `${conn.user}@${conn.host}:${conn.port}`;
  let expected: Buffer;
  let algorithms: ReturnType<typeof hostKeyAlgorithms>;
  try {
    expected = blobOfKeyLine(conn.hostKey);
    algorithms = hostKeyAlgorithms(conn.hostKey, where);
  } catch (err) {
    return Promise.reject(sshError((err as Error).message));
  }
  let presented: Buffer | undefined;
  return new Promise<ScriptResult>((resolve, reject) => {
    const client = new Client();
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (err: Error | undefined, result?: ScriptResult) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      client.end();
      if (err) reject(err);
      else resolve(result!);
    };
    client.on("error", (err: Error & { level?: string; code?: string }) => {
      if (presented && !presented.equals(expected)) {
        finish(
          sshError(
            `host key of ${where} does not match the pinned key: expected ${fingerprintOfKeyLine(conn.hostKey)}, ` +
              `presented ${fingerprintOfBlob(presented)}. If the host was rebuilt, verify the new key on its console ` +
              `and update hostKey in the stack config; otherwise treat this as an attack.`,
          ),
        );
      } else if (err.level === "handshake" && /no matching host key format/.test(err.message)) {
        finish(
          sshError(
            `host ${where} has no host key of the pinned key's type (it offers none of ` +
              `${algorithms.join(", ")}). If the host was rebuilt, verify its key on its console ` +
              `and update hostKey in the stack config; otherwise treat this as an attack.`,
          ),
        );
      } else if (err.level === "client-authentication") {
        finish(
          sshError(
            `permission denied for ${where}: the host refused sshPrivateKey; add its public key to the user's authorized_keys.`,
          ),
        );
      } else if (err.level === "client-timeout") {
        finish(
          sshError(
            `host ${where} did not answer SSH within ${options.connectTimeoutMs ?? 15000} ms; check that it is up and reachable.`,
          ),
        );
      } else {
        finish(
          sshError(
            `cannot reach ${where}: ${err.code ?? err.message}; check that the host is up and sshd listens there.`,
          ),
        );
      }
    });
    client.on("ready", () => {
      client.exec(options.command ?? "bash -s", (err, stream) => {
        if (err) return finish(sshError(`cannot start a shell on ${where}: ${err.message}`));
        let stdout = "";
        let stderr = "";
        let partial = "";
        stream.on("data", (d: Buffer) => (stdout += d.toString()));
        stream.stderr.on("data", (d: Buffer) => {
          const text = d.toString();
          stderr += text;
          partial += text;
          const lines = partial.split("\n");
          partial = lines.pop() ?? "";
          for (const line of lines) options.onProgress?.(line);
        });
        stream.on("close", (code: number | null, signal?: string) => {
          if (partial) options.onProgress?.(partial);
          if (signal) {
            finish(
              sshError(
                `the SSH session to ${where} ended before the script finished: it was killed there by ${signal}; re-run to converge.`,
              ),
            );
          } else if (code === null || code === undefined) {
            finish(
              sshError(
                `the SSH session to ${where} ended before the script finished; it may still be running there.`,
              ),
            );
          } else {
            finish(undefined, { exitCode: code, stdout, stderr });
          }
        });
        if (options.stdin) {
          const input = options.stdin();
          input.on("error", (e: Error) =>
            finish(sshError(`cannot read what was to be sent to ${where}: ${e.message}`)),
          );
          input.pipe(stream);
        } else stream.end(scriptWithParams(script, options.params ?? {}));
      });
    });
    if (options.signal?.aborted)
      return finish(sshError(`the SSH session to ${where} was cut before it started.`));
    options.signal?.addEventListener(
      "abort",
      () =>
        finish(
          sshError(
            `the SSH session to ${where} was cut before the script finished; it may still be running there.`,
          ),
        ),
      { once: true },
    );
    if (options.timeoutMs) {
      timer = setTimeout(
        () =>
          finish(
            sshError(
              `script on ${where} did not finish within ${options.timeoutMs} ms; the session was closed, but the script may still be running there.`,
            ),
          ),
        options.timeoutMs,
      );
    }
    client.connect({
      host: conn.host,
      port: conn.port,
      username: conn.user,
      privateKey: conn.privateKey,
      readyTimeout: options.connectTimeoutMs ?? 15000,
      // Only the pinned key's algorithms, so the server presents the pinned key.
      algorithms: { serverHostKey: algorithms },
      hostVerifier: (key: Buffer) => {
        presented = key;
        return key.equals(expected);
      },
    });
  });
}

export interface HostScriptOptions {
  /** Names the host in messages and log lines, e.g. the node name. */
  readonly label: string;
  readonly params?: Readonly<Record<string, string>>;
  /** Bound for the step (ms). The host stops the script a few seconds before it. */
  readonly timeoutMs: number;
  /** Echo the script's stderr lines into the Pulumi log (dynamic providers have no engine
   * connection; the engine shows what they print). */
  readonly log?: (line: string) => void;
  /** The host-side lock that keeps two runs of one resource's step from overlapping: a file
   * name of letters, digits, "_", "." and "-". Default: derived from the label. */
  readonly lockName?: string;
}

/**
 * What every SSH-backed provider does: run one script on a pinned host, and turn an SSH fault
 * or a non-zero exit into one error that names the host and the script's reason.
 * On the host the script runs under a per-resource lock (a second run waits briefly, then fails
 * while the first is still active) and under `timeout`, so a step that overruns is stopped
 * there before this call returns, not left running unseen.
 * `key` is the step's state (the key's fingerprint; older state, the key) and `script` its
 * recorded script reference (older state, the text): see ./host-material.ts and ../assets.ts.
 */
export async function runHostScript(
  target: SshEndpoint,
  key: HostKeyState,
  script: string,
  options: HostScriptOptions,
): Promise<ScriptResult> {
  const label = options.label;
  const privateKey = privateKeyFor(key, label);
  const text = scriptText(script, label);
  const bounds = hostStepBounds(options.timeoutMs);
  let lockFile: string;
  try {
    lockFile = lockFileName(label, options.lockName);
  } catch (err) {
    throw new Error(`${label}: ${(err as Error).message}`);
  }
  const log = options.log;
  const result = await runScript({ ...target, privateKey }, text, {
    params: options.params,
    timeoutMs: bounds.clientBoundMs,
    command: hostStepCommand(lockFile, bounds),
    onProgress:
      log &&
      ((line) => {
        // host-step.sh's markers are for this function, not for the log.
        const at = line.indexOf(HOST_STEP_MARKER);
        if (at < 0) log(`${label}: ${line}`);
        else if (at > 0) log(`${label}: ${line.slice(0, at)}`);
      }),
  }).catch((err: Error) => {
    throw new Error(`${label}: ${err.message}`);
  });
  const outcome = hostStepOutcome(result);
  switch (outcome.kind) {
    case "lock-busy":
      throw new Error(
        `${label}: another run is still active on ${target.host} (it holds ${outcome.lockFile}; ` +
          `waited ${bounds.lockWaitSeconds} s); let it finish or stop it there, then re-run.`,
      );
    case "timed-out":
      throw new Error(
        `${label}: timed out on ${target.host} after ${bounds.scriptSeconds} s; the script was ` +
          `stopped there; re-run to converge.`,
      );
    case "finished":
      break;
    default: {
      const unexpected: never = outcome;
      throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`);
    }
  }
  if (result.exitCode !== 0) throw new Error(`${label}: ${failureReason(result)}`);
  return result;
}

/**
 * Copies a file here to `remoteDir/name` on a pinned host (mode 0600, the directory 0700): written
 * as `.name.part`, then renamed, so a dropped session never leaves a partial file under the name.
 * Only the paths show in the host's process list.
 */
export async function uploadFile(
  target: SshEndpoint,
  key: HostKeyState,
  local: string,
  remoteDir: string,
  name: string,
  options: { readonly label: string; readonly timeoutMs: number },
): Promise<void> {
  const part = `${remoteDir}/.${name}.part`;
  const command =
    `umask 077 && mkdir -p -- ${shellQuote(remoteDir)} && cat > ${shellQuote(part)} && ` +
    `mv -f -- ${shellQuote(part)} ${shellQuote(`${remoteDir}/${name}`)}`;
  const privateKey = privateKeyFor(key, options.label);
  const result = await runScript({ ...target, privateKey }, "", {
    command,
    stdin: () => fs.createReadStream(local),
    timeoutMs: options.timeoutMs,
  }).catch((err: Error) => {
    throw new Error(`${options.label}: copying ${name}: ${err.message}`);
  });
  if (result.exitCode !== 0)
    throw new Error(
      `${options.label}: copying ${name} to ${remoteDir} failed: ${failureReason(result)}`,
    );
}

/** The lines a host script reported as "changed: ...", without the prefix. */
export function changedLines(result: ScriptResult): string[] {
  return result.stderr
    .split("\n")
    .filter((l) => l.startsWith("changed: "))
    .map((l) => l.slice("changed: ".length));
}

/** Whether any of the named inputs, compared as JSON, differ between two states. */
export function inputsDiffer<T extends object>(
  olds: T,
  news: T,
  keys: readonly (keyof T)[],
): boolean {
  return keys.some((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]));
}
