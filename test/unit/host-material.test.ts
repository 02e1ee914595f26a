/**
 * What keeps scripts, the SSH key and provider code out of a host step's state: script
 * references, the key's fingerprint and the stack's key, and the one-time rewrite of older state.
 */
import * as assert from "assert/strict";
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import { createRequire } from "module";
import * as os from "os";
import * as path from "path";
import { isScriptRef, scriptDigest, scriptRef, scriptText } from "../../components/assets";
import { hostProvider, upgradeState } from "../../components/host-providers";
import { providerLoader } from "../../components/ssh/provider-stub";
import {
  privateKeyFor,
  sshKeyFingerprint,
  useStackConfig,
} from "../../components/ssh/host-material";

const REPO = path.resolve(__dirname, "..", "..", "..");
const PREPARE = path.join(REPO, "components", "node-preparation", "prepare-node.sh");

/** A key made by ssh-keygen, and the fingerprint ssh-keygen prints for it. */
function generatedKey(): { key: string; fingerprint: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-key-"));
  const file = path.join(dir, "id");
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", file]);
  const printed = execFileSync("ssh-keygen", ["-l", "-f", file], { encoding: "utf8" });
  const key = fs.readFileSync(file, "utf8");
  fs.rmSync(dir, { recursive: true });
  return { key, fingerprint: printed.split(/\s+/)[1] };
}

describe("host material kept out of state", () => {
  describe("script references", () => {
    const ref = scriptRef(path.dirname(PREPARE), "prepare-node.sh");
    const text = fs.readFileSync(PREPARE, "utf8");

    it("name the file by its path in the package and its SHA-256", () => {
      const digest = crypto.createHash("sha256").update(text).digest("hex");
      assert.match(
        ref,
        new RegExp(
          `^components/node-preparation/prepare-node\\.sh@sha256:${digest} \\(rke2-remediation [0-9.]+\\)$`,
        ),
      );
      assert.ok(isScriptRef(ref));
      assert.ok(!isScriptRef(text));
      assert.equal(scriptDigest(ref), scriptDigest(text));
    });

    it("resolve to the file's text, and older state's text to itself", () => {
      assert.equal(scriptText(ref, "node n1"), text);
      assert.equal(scriptText("#!/bin/bash\necho hi\n", "node n1"), "#!/bin/bash\necho hi\n");
    });

    it("refuse a file whose content no longer has the recorded hash, naming the step", () => {
      const stale = ref.replace(/@sha256:[0-9a-f]{64}/, `@sha256:${"0".repeat(64)}`);
      assert.throws(
        () => scriptText(stale, "node n1"),
        /^Error: node n1: components\/node-preparation\/prepare-node\.sh changed after this run planned it .*nothing ran on the host/,
      );
    });
  });

  describe("the SSH key", () => {
    const { key, fingerprint } = generatedKey();

    it("is recorded by the fingerprint ssh-keygen prints for it", () => {
      assert.equal(sshKeyFingerprint(key), fingerprint);
    });

    it("is read from the stack's sshPrivateKey when its fingerprint matches", () => {
      useStackConfig((name) => (name === "sshPrivateKey" ? key : undefined));
      assert.equal(privateKeyFor({ sshKeyFingerprint: fingerprint }, "node n1"), key);
    });

    it("another key in the stack is refused, naming the step and both fingerprints, never the key", () => {
      const other = generatedKey();
      useStackConfig((name) => (name === "sshPrivateKey" ? other.key : undefined));
      assert.throws(
        () => privateKeyFor({ sshKeyFingerprint: fingerprint }, "node n1"),
        (err: Error) =>
          err.message.startsWith("node n1: ") &&
          err.message.includes(fingerprint) &&
          err.message.includes(other.fingerprint) &&
          !err.message.includes("PRIVATE KEY"),
      );
      useStackConfig(() => undefined);
      assert.throws(
        () => privateKeyFor({ sshKeyFingerprint: fingerprint }, "node n1"),
        /node n1: the stack sets no sshPrivateKey; set it with `pulumi config set --secret sshPrivateKey/,
      );
    });

    it("is read from the config key the step names, where the program keeps it under another", () => {
      useStackConfig((name) => (name === "myorg:sshKey" ? key : undefined));
      assert.equal(
        privateKeyFor({ sshKeyFingerprint: fingerprint, sshKeyConfig: "myorg:sshKey" }, "node n1"),
        key,
      );
      // Not from the default key, which this stack does not set.
      assert.throws(
        () => privateKeyFor({ sshKeyFingerprint: fingerprint }, "node n1"),
        /node n1: the stack sets no sshPrivateKey/,
      );
      useStackConfig(() => undefined);
      assert.throws(
        () =>
          privateKeyFor(
            { sshKeyFingerprint: fingerprint, sshKeyConfig: "myorg:sshKey" },
            "node n1",
          ),
        /node n1: the stack sets no myorg:sshKey; set it with `pulumi config set --secret myorg:sshKey < <key file>`/,
      );
    });

    it("older state that holds the key itself still connects with it", () => {
      useStackConfig(() => undefined);
      assert.equal(privateKeyFor({ sshPrivateKey: key }, "node n1"), key);
    });
  });

  describe("the provider loader", () => {
    // The dynamic-provider process loads `__provider` with the SDK's own require-from-string and
    // calls its handler, in the program's directory (pulumi/pulumi@v3.276.0
    // sdk/nodejs/cmd/dynamic-provider/index.ts `getProvider`).
    const requireFromString = createRequire(require.resolve("@pulumi/pulumi"))(
      "require-from-string",
    ) as (code: string) => { handler: () => Record<string, unknown> };
    const programDir = path.join(REPO, "infra");

    function loaded(name: "nodePreparation" | "kubeEgressCheck"): {
      text: string;
      provider: Record<string, unknown>;
    } {
      const cwd = process.cwd();
      process.chdir(programDir);
      try {
        const text = providerLoader(name);
        return { text, provider: requireFromString(text).handler() };
      } finally {
        process.chdir(cwd);
      }
    }

    it("is a few lines that load the named provider from the package, every method present", () => {
      for (const name of ["nodePreparation", "kubeEgressCheck"] as const) {
        const { text, provider } = loaded(name);
        assert.ok(text.length < 600, `${name}: ${text.length} bytes`);
        assert.doesNotMatch(text, /runHostScript|BEGIN OPENSSH|function /);
        for (const method of ["configure", "check", "diff", "create", "read", "update", "delete"])
          assert.equal(typeof provider[method], "function", `${name}: ${method}`);
      }
    });

    it("is the same text for every resource of one provider, so the process loads it once", () => {
      assert.equal(loaded("nodePreparation").text, loaded("nodePreparation").text);
      assert.notEqual(loaded("nodePreparation").text, loaded("kubeEgressCheck").text);
    });
  });

  describe("older state", () => {
    const ref = scriptRef(path.dirname(PREPARE), "prepare-node.sh");
    const text = fs.readFileSync(PREPARE, "utf8");
    const { key, fingerprint } = generatedKey();
    const news = { node: "n1", script: ref, sshKeyFingerprint: fingerprint, __provider: "loader" };

    it("is upgraded: the key becomes its fingerprint, a script of the same text its reference", () => {
      const olds = {
        node: "n1",
        script: text,
        sshPrivateKey: key,
        __provider: "exports.handler = big",
      };
      const { state, older } = upgradeState(olds, news);
      assert.ok(older);
      assert.deepEqual(state, { node: "n1", script: ref, sshKeyFingerprint: fingerprint });
    });

    it("a key moved to another config key rewrites the state, without its host, and back", () => {
      const moved = { ...news, sshKeyConfig: "myorg:sshKey" };
      const there = upgradeState({ ...news, __provider: providerLoader("nodePreparation") }, moved);
      assert.deepEqual([there.older, there.state.sshKeyConfig], [true, "myorg:sshKey"]);
      const back = upgradeState({ ...moved, __provider: providerLoader("nodePreparation") }, news);
      assert.deepEqual([back.older, "sshKeyConfig" in back.state], [true, false]);
    });

    it("a script whose text differs stays different, so the step still runs it", () => {
      const { state } = upgradeState(
        { node: "n1", script: "#!/bin/sh\n", sshPrivateKey: key },
        news,
      );
      assert.equal(state.script, "#!/bin/sh\n");
    });

    it("state a loader wrote is not older: this version's, and the serialized one before it", () => {
      const serialized = "exports.handler = __f0; ... rke2-remediation provider loader ...";
      for (const loader of [providerLoader("nodePreparation"), serialized]) {
        const { older } = upgradeState({ ...news, __provider: loader }, news);
        assert.equal(older, false, loader);
      }
    });

    it("an unchanged step is rewritten without its host: update returns the upgraded state", async () => {
      useStackConfig(() => undefined);
      const provider = hostProvider("nodePreparation");
      const desired = {
        node: "n1",
        // Loopback and no key in the stack: a host contact would fail here, and reach nothing.
        connection: { host: "127.0.0.1", port: 1, user: "root", hostKey: "ssh-ed25519 AAAA" },
        bringUpKubeIpvs: false,
        firewallServicesDisabled: true,
        nmCloudSetupDisabled: true,
        rejectRulesAbsent: true,
        networkManagerConfig: "[keyfile]\n",
      };
      const olds = {
        ...desired,
        script: text,
        sshPrivateKey: key,
        __provider: "exports.handler = big",
      };
      const planned = {
        ...desired,
        script: ref,
        sshKeyFingerprint: fingerprint,
        __provider: "loader",
      };
      const diff = await provider.diff("n1/node-preparation", olds, planned);
      assert.equal(diff.changes, true);
      assert.deepEqual(diff.replaces, []);
      const { outs } = await provider.update("n1/node-preparation", olds, planned);
      assert.deepEqual(outs, { ...desired, script: ref, sshKeyFingerprint: fingerprint });
    });
  });
});
