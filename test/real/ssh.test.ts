/** The SSH layer against the lab's real sshd: pinned keys, clear errors, no secret in messages. */
import * as assert from "assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { runScript } from "../../components/ssh/run-script";
import { nodeConnection } from "./lab";

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

  it("reports a session cut mid-script as a re-runnable failure", async () => {
    await assert.rejects(
      runScript(nodeConnection(20), "sleep 30", { timeoutMs: 1000 }),
      /did not finish within 1000 ms; it is safe to re-run/,
    );
  });
});
