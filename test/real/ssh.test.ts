/**
 * The SSH layer against the lab's real sshd: pinned keys of every type, clear errors, no secret
 * in messages, steps stopped on the host when they overrun, and no two runs of a step at once.
 */
import * as assert from "assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { fingerprintOfKeyLine } from "../../components/ssh/host-key";
import { runHostScript, runScript, SshConnection } from "../../components/ssh/run-script";
import { inNamespace, LAB_DIR, labNs, nodeConnection, stepKey } from "./lab";

describe("SSH to lab hosts", function () {
  this.timeout(60000);

  it("runs a script with parameters passed safely", async () => {
    const r = await runScript(nodeConnection(20), 'printf "%s" "$GREETING"', {
      params: { GREETING: "it's $(not run)" },
    });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "it's $(not run)");
  });

  it("names the host when nothing answers there", async () => {
    const conn = { ...nodeConnection(20), host: "192.168.122.99" };
    await assert.rejects(
      runScript(conn, "true", { connectTimeoutMs: 5000 }),
      /(cannot reach|did not answer SSH).*192\.168\.122\.99/,
    );
  });

  it("says permission denied for a key the host does not accept, without printing the key", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-key-"));
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "k")]);
    const stranger = fs.readFileSync(path.join(dir, "k"), "utf8");
    fs.rmSync(dir, { recursive: true });
    await assert.rejects(
      runScript({ ...nodeConnection(20), privateKey: stranger }, "true"),
      (err: Error) => {
        assert.match(err.message, /permission denied for root@192\.168\.122\.20/);
        assert.ok(
          !err.message.includes("PRIVATE KEY") && !err.message.includes(stranger.split("\n")[1]),
        );
        return true;
      },
    );
  });

  it("says a script abandoned by the client's own bound may still be running", async () => {
    await assert.rejects(
      runScript(nodeConnection(20), "sleep 30", { timeoutMs: 1000 }),
      (err: Error) => {
        assert.match(
          err.message,
          /did not finish within 1000 ms; the session was closed, but the script may still be running there/,
        );
        assert.doesNotMatch(err.message, /safe to re-run|re-run to converge/);
        return true;
      },
    );
  });
});

/** The private key file and public key line of a fresh key made by ssh-keygen. */
function makeKey(dir: string, name: string, type: string, bits?: number) {
  const file = path.join(dir, name);
  const args = ["-q", "-t", type, "-N", "", "-C", "", "-f", file];
  if (bits) args.push("-b", String(bits));
  execFileSync("ssh-keygen", args);
  const line = fs.readFileSync(`${file}.pub`, "utf8").trim().split(/\s+/).slice(0, 2).join(" ");
  return { file, line };
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 500 });
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => (socket.destroy(), resolve(false)));
  });
}

describe("pinned host keys of every type", function () {
  this.timeout(60000);
  // A second sshd in node .20's namespaces, on port 2222, with ed25519, ECDSA and RSA host keys
  // made here (the lab's own sshd has only ed25519). A server with several keys presents the
  // one the client prefers; ssh2 prefers ed25519, so only offering the pinned key's algorithm
  // lets a pinned ECDSA or RSA key verify.
  const PORT = 2222;
  // Rocky's INPUT rules reject all but port 22: let the test's port through while it runs.
  const acceptRule = ["INPUT", "-p", "tcp", "--dport", String(PORT), "-j", "ACCEPT"];
  let dir: string;
  let keys: Record<"ed25519" | "ecdsa" | "rsa" | "otherEcdsa" | "otherRsa" | "ecdsa384", string>;

  const pinned = (hostKey: string): SshConnection => ({
    ...nodeConnection(20),
    port: PORT,
    hostKey,
  });

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-sshd-"));
    keys = {
      ed25519: makeKey(dir, "ssh_host_ed25519_key", "ed25519").line,
      ecdsa: makeKey(dir, "ssh_host_ecdsa_key", "ecdsa", 256).line,
      rsa: makeKey(dir, "ssh_host_rsa_key", "rsa", 3072).line,
      otherEcdsa: makeKey(dir, "other_ecdsa", "ecdsa", 256).line,
      otherRsa: makeKey(dir, "other_rsa", "rsa", 3072).line,
      ecdsa384: makeKey(dir, "other_ecdsa384", "ecdsa", 384).line,
    };
    const nodeSsh = path.join(LAB_DIR, "nodes", "n20", "ssh");
    fs.writeFileSync(
      path.join(dir, "sshd_config"),
      [
        `ListenAddress 192.168.122.20:${PORT}`,
        ...["ed25519", "ecdsa", "rsa"].map((t) => `HostKey ${path.join(dir, `ssh_host_${t}_key`)}`),
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        `AuthorizedKeysFile ${path.join(nodeSsh, "authorized_keys")}`,
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        `PidFile ${path.join(dir, "sshd.pid")}`,
        "",
      ].join("\n"),
    );
    // In the node's mount namespace too, where /run/sshd (privilege separation) exists.
    const nodeSshd = fs.readFileSync(path.join(LAB_DIR, "nodes", "n20", "sshd.pid"), "utf8").trim();
    execFileSync("nsenter", [
      "--target",
      nodeSshd,
      "--mount",
      "--net",
      "/usr/sbin/sshd",
      "-f",
      path.join(dir, "sshd_config"),
      "-E",
      path.join(dir, "sshd.log"),
    ]);
    const opened = inNamespace(labNs("n20"), ["iptables", "-I", ...acceptRule]);
    assert.equal(opened.status, 0, opened.stderr);
    for (let i = 0; i < 50 && !(await portOpen("192.168.122.20", PORT)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  after(() => {
    inNamespace(labNs("n20"), ["iptables", "-D", ...acceptRule]);
    const pidFile = path.join(dir, "sshd.pid");
    if (fs.existsSync(pidFile)) process.kill(Number(fs.readFileSync(pidFile, "utf8").trim()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const type of ["ecdsa", "rsa", "ed25519"] as const) {
    it(`connects to a host with several keys when its ${type} key is pinned`, async () => {
      const r = await runScript(pinned(keys[type]), "echo ok");
      assert.equal(r.stdout, "ok\n");
    });
  }

  for (const [type, wrong, right] of [
    ["ECDSA", "otherEcdsa", "ecdsa"],
    ["RSA", "otherRsa", "rsa"],
  ] as const) {
    it(`refuses a wrong ${type} key, naming the key the host presented`, async () => {
      await assert.rejects(runScript(pinned(keys[wrong]), "echo ran"), (err: Error) => {
        assert.match(
          err.message,
          /host key of root@192\.168\.122\.20:2222 does not match the pinned key/,
        );
        assert.ok(err.message.includes(`expected ${fingerprintOfKeyLine(keys[wrong])}`));
        assert.ok(err.message.includes(`presented ${fingerprintOfKeyLine(keys[right])}`));
        assert.match(err.message, /otherwise treat this as an attack/);
        return true;
      });
    });
  }

  it("refuses a pinned key type the host does not have, naming the host", async () => {
    await assert.rejects(
      runScript(pinned(keys.ecdsa384), "echo ran"),
      /host root@192\.168\.122\.20:2222 has no host key of the pinned key's type \(it offers none of ecdsa-sha2-nistp384\)/,
    );
  });
});

describe("steps on a host: stopped when they overrun, never two at once", function () {
  this.timeout(60000);
  const conn = nodeConnection(20);
  const target = { host: conn.host, port: conn.port, user: conn.user, hostKey: conn.hostKey };
  const PIDS = "/run/rke2r-ssh-test-step.pids";

  /** The processes from the pid file, and those that still run on the node (not zombies). */
  async function stepProcesses(): Promise<{ started: string[]; running: string[] }> {
    const r = await runScript(
      conn,
      `cat ${PIDS} >&2
       for pid in $(cat ${PIDS}); do
         if [ -r /proc/$pid/stat ] && ! grep -Eq '^[0-9]+ \\(.*\\) [ZX] ' /proc/$pid/stat; then echo "$pid"; fi
       done`,
    );
    assert.equal(r.exitCode, 0, r.stderr);
    return { started: r.stderr.trim().split(/\s+/), running: r.stdout.split("\n").filter(Boolean) };
  }

  it("keeps the script and its parameters off the host's command line", async () => {
    const secret = "s3cret-token-value";
    const r = await runHostScript(target, stepKey(), ": script-text-marker; ps -eo args", {
      label: "ssh test process list",
      params: { TOKEN: secret },
      timeoutMs: 20000,
    });
    assert.ok(r.stdout.includes("rke2-remediation-step"), "the step wrapper is not in the list");
    assert.ok(!r.stdout.includes(secret) && !r.stdout.includes("script-text-marker"));
  });

  it("a step past its bound is stopped on the host before the call returns", async () => {
    await runScript(conn, `rm -f ${PIDS}`);
    const started = Date.now();
    await assert.rejects(
      runHostScript(target, stepKey(), `sleep 60 & echo "$$ $!" > ${PIDS}; wait`, {
        label: "ssh test overrun",
        timeoutMs: 8000,
      }),
      (err: Error) => {
        assert.equal(
          err.message,
          "ssh test overrun: timed out on 192.168.122.20 after 3 s; the script was stopped there; re-run to converge.",
        );
        return true;
      },
    );
    // The host's verdict, not the client's backstop (8 s + 2 s lock wait).
    assert.ok(Date.now() - started < 8000, `took ${Date.now() - started} ms`);
    const { started: pids, running } = await stepProcesses();
    assert.equal(pids.length, 2, `the step recorded ${pids.join(" ")}`);
    assert.deepEqual(running, [], "the step's shell or its sleep still runs on the host");
  });

  it("a second run while the first holds the lock fails, naming the host", async () => {
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const first = runHostScript(
      target,
      stepKey(),
      "echo 'step: started' >&2; sleep 6; echo first",
      {
        label: "ssh test lock",
        timeoutMs: 30000,
        log: (line) => line.endsWith("step: started") && firstStarted(),
      },
    );
    await started;
    await assert.rejects(
      runHostScript(target, stepKey(), "echo second", {
        label: "ssh test lock",
        timeoutMs: 8000,
      }),
      (err: Error) => {
        assert.match(
          err.message,
          /^ssh test lock: another run is still active on 192\.168\.122\.20 \(it holds \/run\/lock\/rke2-remediation\/ssh-test-lock\.lock; waited 2 s\)/,
        );
        return true;
      },
    );
    assert.equal((await first).stdout, "first\n");
    // Once the first run is over, the lock is free again.
    const again = await runHostScript(target, stepKey(), "echo second", {
      label: "ssh test lock",
      timeoutMs: 8000,
    });
    assert.equal(again.stdout, "second\n");
  });
});
