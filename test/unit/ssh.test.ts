import * as assert from "assert/strict";
import { execFileSync, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import {
  blobOfKeyLine,
  fingerprintOfKeyLine,
  hostKeyAlgorithms,
} from "../../components/ssh/host-key";
import {
  HostStepBounds,
  hostStepBounds,
  hostStepCommand,
  hostStepOutcome,
  lockFileName,
} from "../../components/ssh/host-step";
import { scriptWithParams, shellQuote } from "../../components/ssh/run-script";

describe("SSH host key fingerprints", () => {
  let dir: string;
  let keyFile: string;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "host-key-test-"));
    keyFile = path.join(dir, "ssh_host_ed25519_key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "root@test", "-f", keyFile]);
  });

  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("matches the SHA256 fingerprint ssh-keygen prints for the same key", () => {
    const pub = fs.readFileSync(`${keyFile}.pub`, "utf8");
    // "256 SHA256:<base64> root@test (ED25519)"
    const printed = execFileSync("ssh-keygen", ["-lf", `${keyFile}.pub`], { encoding: "utf8" });
    const expected = printed.split(" ")[1];
    assert.match(expected, /^SHA256:[A-Za-z0-9+/]{43}$/);
    assert.equal(fingerprintOfKeyLine(pub), expected);
  });

  it("gives the same fingerprint with or without the comment and trailing newline", () => {
    const pub = fs.readFileSync(`${keyFile}.pub`, "utf8");
    const [type, blob] = pub.trim().split(" ");
    assert.equal(fingerprintOfKeyLine(`${type} ${blob}`), fingerprintOfKeyLine(pub));
  });

  it("refuses a line that is not an OpenSSH public key", () => {
    assert.throws(() => blobOfKeyLine("ssh-ed25519"), /is not an OpenSSH public key line/);
  });
});

describe("shellQuote", () => {
  /** What bash makes of `X=<quoted>` followed by printing $X. */
  function throughBash(value: string): string {
    return execFileSync("bash", ["-c", `X=${shellQuote(value)}\nprintf %s "$X"`], {
      encoding: "utf8",
    });
  }

  const values: Record<string, string> = {
    "single quotes": "it's 'quoted'",
    "double quotes": 'say "hi"',
    spaces: "  leading and trailing  ",
    "command substitution": "$(touch /tmp/shellquote-pwned) `id`",
    "variables and globs": "$HOME ${PATH} * ? [a-z] ~",
    newlines: "line one\nline two\n\nlast",
    "backslashes and semicolons": "a\\b; rm -rf / && echo done | cat",
    empty: "",
    "only a quote": "'",
  };

  for (const [what, value] of Object.entries(values)) {
    it(`survives a round-trip through bash with ${what}`, () => {
      assert.equal(throughBash(value), value);
    });
  }

  it("runs nothing inside the value", () => {
    const marker = path.join(os.tmpdir(), `shellquote-${process.pid}`);
    fs.rmSync(marker, { force: true });
    throughBash(`$(touch ${marker})';touch ${marker};'`);
    assert.ok(!fs.existsSync(marker), "the quoted value ran a command");
  });
});

describe("host key algorithms offered for a pinned key", () => {
  const blob = "AAAAC3NzaC1lZDI1NTE5AAAAIH1f7x7n0kq3JmE1m2Rr8VwJ2U2m1Xo8vZC6c7h0jLqP";
  const cases: Record<string, string[]> = {
    "ssh-ed25519": ["ssh-ed25519"],
    "ecdsa-sha2-nistp256": ["ecdsa-sha2-nistp256"],
    "ecdsa-sha2-nistp384": ["ecdsa-sha2-nistp384"],
    "ecdsa-sha2-nistp521": ["ecdsa-sha2-nistp521"],
    "ssh-rsa": ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"],
  };

  for (const [type, expected] of Object.entries(cases)) {
    it(`offers only ${expected.join(", ")} for a pinned ${type} key`, () => {
      assert.deepEqual(hostKeyAlgorithms(`${type} ${blob} root@host`, "root@h:22"), expected);
    });
  }

  it("refuses an unknown key type, naming the host and the type", () => {
    assert.throws(
      () => hostKeyAlgorithms(`ssh-dss ${blob}`, "root@192.168.122.20:22"),
      /pinned for root@192\.168\.122\.20:22 has type "ssh-dss", which is not supported; pin the host's ssh-ed25519/,
    );
  });
});

describe("host step lock names", () => {
  it("derives a readable file name from the label", () => {
    assert.equal(lockFileName("node sza122020.local"), "node-sza122020.local.lock");
    assert.equal(
      lockFileName("libvirt host 192.168.122.1, network default"),
      "libvirt-host-192.168.122.1-network-default.lock",
    );
  });

  it("never leaves a path separator, a leading dot or dash, or shell characters", () => {
    for (const label of ["../../etc/passwd", "-rf /", "$(id) `x`; y", ".hidden", "a/b\nc"]) {
      const name = lockFileName(label);
      assert.match(name, /^[a-z0-9_][a-z0-9_.-]*\.lock$/, `${label} -> ${name}`);
      assert.ok(!name.includes(".."), `${label} -> ${name}`);
    }
  });

  it("keeps long labels with a common prefix apart", () => {
    const prefix = "192.168.122.20 /var/lib/rancher/rke2/server/manifests/".padEnd(120, "x");
    const a = lockFileName(`${prefix}-a.yaml`);
    const b = lockFileName(`${prefix}-b.yaml`);
    assert.notEqual(a, b);
    assert.ok(a.length <= 105, a);
  });

  it("uses an explicit lock name as given, and refuses one that is not a safe file name", () => {
    assert.equal(lockFileName("node a", "rke2-start_a.local"), "rke2-start_a.local.lock");
    for (const bad of ["-x", ".x", "a/b", "a b", ""]) {
      assert.throws(() => lockFileName("node a", bad), /is not a safe file name/);
    }
  });
});

describe("host step bounds", () => {
  it("stops the script on the host a few seconds before the caller's bound", () => {
    const b = hostStepBounds(120000);
    assert.equal(b.scriptSeconds, 115);
    assert.equal(b.killAfterSeconds, 2);
    assert.ok(b.scriptSeconds + b.killAfterSeconds < 120);
  });

  it("waits a bounded time for the lock: a quarter of the bound, at most 30 s", () => {
    assert.equal(hostStepBounds(8000).lockWaitSeconds, 2);
    assert.equal(hostStepBounds(60000).lockWaitSeconds, 15);
    assert.equal(hostStepBounds(900000).lockWaitSeconds, 30);
    assert.equal(hostStepBounds(1000).lockWaitSeconds, 1);
  });

  it("keeps the client's backstop after the host's lock wait, script bound and kill grace", () => {
    for (const ms of [1000, 3000, 8000, 60000, 900000]) {
      const b = hostStepBounds(ms);
      assert.ok(b.scriptSeconds >= 1);
      assert.ok(
        b.clientBoundMs >= (b.lockWaitSeconds + b.scriptSeconds + b.killAfterSeconds + 3) * 1000,
        `${ms}: ${JSON.stringify(b)}`,
      );
    }
  });
});

describe("host step outcome", () => {
  it("reads the lock-busy marker only with its exit code", () => {
    const stderr = "rke2-remediation-step: lock busy /run/lock/rke2-remediation/node-a.lock\n";
    assert.deepEqual(hostStepOutcome({ exitCode: 75, stderr }), {
      kind: "lock-busy",
      lockFile: "/run/lock/rke2-remediation/node-a.lock",
    });
    assert.deepEqual(hostStepOutcome({ exitCode: 75, stderr: "error: other\n" }), {
      kind: "finished",
    });
  });

  it("reads the timed-out marker, also after a partial stderr line", () => {
    const stderr = "waiting for etcdrke2-remediation-step: timed out after 3 s\n";
    assert.deepEqual(hostStepOutcome({ exitCode: 124, stderr }), { kind: "timed-out" });
    assert.deepEqual(hostStepOutcome({ exitCode: 137, stderr }), { kind: "timed-out" });
  });

  it("does not take a script's own exit code 124 for a timeout", () => {
    assert.deepEqual(hostStepOutcome({ exitCode: 124, stderr: "error: curl timed out\n" }), {
      kind: "finished",
    });
  });
});

describe("the host step wrapper, run by a local shell as sshd runs it", function () {
  this.timeout(20000);
  let lockDir: string;
  const bounds: HostStepBounds = {
    lockWaitSeconds: 1,
    scriptSeconds: 1,
    killAfterSeconds: 1,
    clientBoundMs: 8000,
  };

  beforeEach(() => {
    lockDir = fs.mkdtempSync(path.join(os.tmpdir(), "host-step-test-"));
  });

  afterEach(() => {
    fs.rmSync(lockDir, { recursive: true, force: true });
  });

  /** `sh -c <command>` with the script on stdin: what sshd does with an exec request. */
  function step(script: string, params: Record<string, string> = {}, b = bounds) {
    const command = hostStepCommand("t.lock", b, path.join(lockDir, "locks"));
    const started = Date.now();
    const r = spawnSync("sh", ["-c", command], {
      input: scriptWithParams(script, params),
      encoding: "utf8",
    });
    return {
      command,
      exitCode: r.status ?? -1,
      stdout: r.stdout,
      stderr: r.stderr,
      ms: Date.now() - started,
    };
  }

  /** Running, not merely a zombie waiting for a parent that may never reap it. */
  function alive(pid: number): boolean {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      return !/^\d+ \(.*\) [ZX] /.test(stat);
    } catch {
      return false;
    }
  }

  it("runs the script from stdin with its parameters, none of them on the command line", () => {
    const secret = "s3cret-$(not run)";
    const r = step('printf "%s" "$TOKEN"', { TOKEN: secret });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, secret);
    assert.ok(!r.command.includes("s3cret") && !r.command.includes("TOKEN"));
    assert.deepEqual(hostStepOutcome(r), { kind: "finished" });
  });

  it("passes the script's own exit code and stderr through", () => {
    const r = step('echo "error: no such unit" >&2; exit 3');
    assert.equal(r.exitCode, 3);
    assert.equal(r.stderr, "error: no such unit\n");
    assert.deepEqual(hostStepOutcome(r), { kind: "finished" });
  });

  it("stops an overrunning script and everything it started before returning", () => {
    const pids = path.join(lockDir, "pids");
    const r = step(`sleep 30 & echo "$$ $!" > ${shellQuote(pids)}; wait`);
    assert.equal(r.exitCode, 124, r.stderr);
    assert.deepEqual(hostStepOutcome(r), { kind: "timed-out" });
    assert.ok(r.ms < 5000, `took ${r.ms} ms`);
    for (const pid of fs.readFileSync(pids, "utf8").trim().split(" ").map(Number)) {
      assert.ok(!alive(pid), `process ${pid} is still running`);
    }
  });

  it("kills a script that ignores SIGTERM once the grace has passed", () => {
    const r = step("trap '' TERM; sleep 1; sleep 1; sleep 1; sleep 1; sleep 1");
    assert.equal(r.exitCode, 137, r.stderr);
    assert.deepEqual(hostStepOutcome(r), { kind: "timed-out" });
    assert.ok(r.ms < 4500, `took ${r.ms} ms`);
  });

  it("fails fast with the lock-busy marker while another run holds the lock", async () => {
    const holder = step("true");
    assert.equal(holder.exitCode, 0, holder.stderr);
    const lockFile = path.join(lockDir, "locks", "t.lock");
    const other = spawn("flock", [lockFile, "sleep", "10"], { stdio: "ignore" });
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const r = step("echo ran");
      assert.equal(r.exitCode, 75);
      assert.equal(r.stdout, "", "the script ran although the lock was held");
      assert.deepEqual(hostStepOutcome(r), { kind: "lock-busy", lockFile });
    } finally {
      other.kill();
    }
  });

  it("does not hand the lock to a daemon the script leaves running", () => {
    const pidFile = path.join(lockDir, "daemon");
    const first = step(
      `setsid sleep 10 </dev/null >/dev/null 2>&1 & echo $! > ${shellQuote(pidFile)}`,
    );
    const daemon = Number(fs.readFileSync(pidFile, "utf8").trim());
    try {
      assert.equal(first.exitCode, 0, first.stderr);
      assert.ok(alive(daemon), "the daemon did not start");
      const second = step("echo ran");
      assert.equal(second.exitCode, 0, second.stderr);
      assert.equal(second.stdout, "ran\n");
    } finally {
      process.kill(daemon);
    }
  });
});
