import * as assert from "assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { blobOfKeyLine, fingerprintOfKeyLine } from "../../components/ssh/host-key";
import { shellQuote } from "../../components/ssh/run-script";

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
