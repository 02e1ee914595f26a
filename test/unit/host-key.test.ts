/** A pinned host key is checked inside: real keys ssh-keygen makes pass, broken ones name why. */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { hostKeyProblem } from "../../infra/config/host-key";

/** A public key line ("<type> <base64>") of a key ssh-keygen makes now. */
function publicKey(type: string, bits?: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-host-key-"));
  try {
    const file = path.join(dir, "key");
    const args = ["-q", "-t", type, "-N", "", "-f", file, ...(bits ? ["-b", String(bits)] : [])];
    const r = spawnSync("ssh-keygen", args, { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return fs.readFileSync(`${file}.pub`, "utf8").split(" ").slice(0, 2).join(" ");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** LINE with the base64 character at INDEX changed to another. */
function oneCharWrong(line: string, index: number): string {
  const [type, data] = line.split(" ");
  const other = data[index] === "A" ? "B" : "A";
  return `${type} ${data.slice(0, index)}${other}${data.slice(index + 1)}`;
}

describe("pinned host keys, checked inside", () => {
  const keys: Record<string, string> = {};
  before(() => {
    keys.ed25519 = publicKey("ed25519");
    keys.rsa = publicKey("rsa", 2048);
    keys.ecdsa256 = publicKey("ecdsa", 256);
    keys.ecdsa384 = publicKey("ecdsa", 384);
    keys.ecdsa521 = publicKey("ecdsa", 521);
  });

  it("passes every key type ssh-keygen makes", () => {
    for (const [name, line] of Object.entries(keys)) {
      assert.equal(hostKeyProblem(line), undefined, `${name}: ${line}`);
    }
  });

  it("names a line whose type is not the key's", () => {
    const [, data] = keys.ed25519.split(" ");
    assert.match(
      hostKeyProblem(`ssh-rsa ${data}`)!,
      /the key inside is "ssh-ed25519", not ssh-rsa/,
    );
    const [, ecdsa] = keys.ecdsa256.split(" ");
    assert.match(
      hostKeyProblem(`ecdsa-sha2-nistp384 ${ecdsa}`)!,
      /"ecdsa-sha2-nistp256", not ecdsa-sha2-nistp384/,
    );
  });

  it("names a key with one character wrong in its type, its length or its end", () => {
    // Index 3 falls in the type name's length field; 10 in the type name; the last in the key.
    for (const index of [3, 10]) {
      assert.ok(hostKeyProblem(oneCharWrong(keys.ed25519, index)), `index ${index}`);
    }
    const [, data] = keys.ed25519.split(" ");
    assert.match(
      hostKeyProblem(`ssh-ed25519 ${data.slice(0, -8)}`)!,
      /ends inside a field|does not decode/,
    );
  });

  it("names a key cut short or with a character that is not base64's", () => {
    assert.match(hostKeyProblem("ssh-ed25519 AAAA")!, /ends inside a field|of no type/);
    assert.match(
      hostKeyProblem("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBM")!,
      /ends inside a field/,
    );
    assert.match(hostKeyProblem(keys.ed25519.replace(/.$/, "*"))!, /does not decode/);
  });
});
