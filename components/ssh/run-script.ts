import { Client } from "ssh2";
import { blobOfKeyLine, fingerprintOfBlob, fingerprintOfKeyLine } from "./host-key";

/** A host's SSH address with its pinned key: what every SSH-backed resource records as `connection`. */
export interface PinnedTarget {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** Pinned OpenSSH public key line; any other key is refused. */
  readonly hostKey: string;
}

export function pinnedTarget(ssh: PinnedTarget): PinnedTarget {
  return { host: ssh.host, port: ssh.port, user: ssh.user, hostKey: ssh.hostKey };
}

/** Where and how to reach a host. The private key is a secret and never appears in messages. */
export interface SshConnection {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** Pinned OpenSSH public key line; any other key is refused. */
  readonly hostKey: string;
  readonly privateKey: string;
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
  /** Bound for the whole script (ms). */
  readonly timeoutMs?: number;
  /** Called with each complete stderr line, for progress in the Pulumi log. */
  readonly onProgress?: (line: string) => void;
  /** Cuts the session when aborted, as a dropped connection would. */
  readonly signal?: AbortSignal;
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

/** Quotes a value for a POSIX shell assignment. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
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
  const expected = blobOfKeyLine(conn.hostKey);
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
      client.exec("bash -s", (err, stream) => {
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
          if (code === null || code === undefined) {
            finish(
              sshError(
                `the SSH session to ${where} ended before the script finished${signal ? ` (signal ${signal})` : ""}; re-run to converge.`,
              ),
            );
          } else {
            finish(undefined, { exitCode: code, stdout, stderr });
          }
        });
        stream.end(scriptWithParams(script, options.params ?? {}));
      });
    });
    if (options.signal?.aborted)
      return finish(sshError(`the SSH session to ${where} was cut before it started.`));
    options.signal?.addEventListener(
      "abort",
      () =>
        finish(
          sshError(
            `the SSH session to ${where} was cut before the script finished; re-run to converge.`,
          ),
        ),
      { once: true },
    );
    if (options.timeoutMs) {
      timer = setTimeout(
        () =>
          finish(
            sshError(
              `script on ${where} did not finish within ${options.timeoutMs} ms; it is safe to re-run.`,
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
  readonly timeoutMs: number;
  /** Echo the script's stderr lines into the Pulumi log (dynamic providers have no engine
   * connection; the engine shows what they print). */
  readonly log?: (line: string) => void;
}

/**
 * What every SSH-backed provider does: run one script on a pinned host, and turn an SSH fault
 * or a non-zero exit into one error that names the host and the script's reason.
 */
export async function runHostScript(
  target: PinnedTarget,
  privateKey: string,
  script: string,
  options: HostScriptOptions,
): Promise<ScriptResult> {
  const result = await runScript({ ...target, privateKey }, script, {
    params: options.params,
    timeoutMs: options.timeoutMs,
    onProgress: options.log && ((line) => options.log!(`${options.label}: ${line}`)),
  }).catch((err: Error) => {
    throw new Error(`${options.label}: ${err.message}`);
  });
  if (result.exitCode !== 0) throw new Error(`${options.label}: ${failureReason(result)}`);
  return result;
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
