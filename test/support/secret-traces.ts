/**
 * Where a secret may show when the product runs: the command lines of the processes on the
 * machine (readable by every local user in /proc/<pid>/cmdline), and any text it prints or
 * writes. Shared by the real and e2e tiers' Rancher cases.
 */
import * as fs from "fs";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The first run of 8 characters of any of `secrets` that `text` holds (its first 2 shown). */
export function sliceOf(secrets: readonly string[], text: string): string | undefined {
  for (const secret of secrets) {
    for (let i = 0; i + 8 <= secret.length; i++) {
      if (text.includes(secret.slice(i, i + 8))) return `${secret.slice(i, i + 8).slice(0, 2)}...`;
    }
  }
  return undefined;
}

/** Every distinct command line on the machine, sampled every 20 ms while `done` is pending. */
export async function sampleCommandLines(done: Promise<unknown>): Promise<Set<string>> {
  const seen = new Set<string>();
  let finished = false;
  void done.finally(() => (finished = true));
  while (!finished) {
    for (const pid of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
        if (argv) seen.add(argv.split("\0").join(" ").trim());
      } catch {
        // the process has exited
      }
    }
    await sleep(20);
  }
  return seen;
}

/**
 * The command lines that carry any 8 characters of `secrets`, but for the one upstream
 * exception: rancher/system-agent@v0.14.0 install.sh passes the registration token to its curl
 * of /v3/connect/agent in a -H argument (around line 801).
 */
export function commandLineLeaks(lines: Set<string>, secrets: readonly string[]): string[] {
  return [...lines].filter(
    (c) =>
      sliceOf(secrets, c) !== undefined &&
      !/^curl .*Authorization: Bearer .*\/v3\/connect\/agent/.test(c),
  );
}
