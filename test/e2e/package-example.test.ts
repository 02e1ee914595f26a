/**
 * The package as another Pulumi program uses it: `npm pack` of this repository, installed into a
 * copy of examples/one-server outside it, type-checked against the declaration files and
 * previewed with the real CLI against a lab node (examples/one-server/README.md's steps).
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { pulumiIn } from "./cli";
import { hostKeyIn, LAB_DIR, operatorKey, REPO } from "../real/lab";
import { NODE_PREPARATION, UPSTREAM_PREFLIGHT, REMOTE_FILE } from "../../components/model";

const STACK = "lab";

function npm(cwd: string, ...args: string[]): string {
  const r = spawnSync("npm", args, { cwd, encoding: "utf8", timeout: 300000 });
  assert.equal(r.status, 0, `npm ${args.join(" ")}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

describe("examples/one-server, a program of its own that installs the package from npm pack", function () {
  this.timeout(600000);
  let work: string;
  let program: string;

  before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-package-"));
    program = path.join(work, "one-server");
    fs.cpSync(path.join(REPO, "examples", "one-server"), program, { recursive: true });
    // npm pack builds first (prepack) and prints the tarball's name last.
    const tarball = npm(REPO, "pack", "--pack-destination", work).trim().split("\n").pop()!;
    // From npm's cache: the operator namespace has no route out.
    npm(program, "install", "--offline", "--no-audit", "--no-fund", path.join(work, tarball));
  });

  after(() => {
    pulumiIn(program, STACK, ["stack", "rm", "--yes", "--force"]);
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("gets the compiled package, its declaration files and the host scripts, and nothing of the tests", () => {
    const installed = path.join(program, "node_modules", "rke2-remediation");
    for (const file of [
      "bin/infra/library.js",
      "bin/infra/library.d.ts",
      "bin/components/index.d.ts",
      "components/node-preparation/prepare-node.sh",
      "LICENSE",
      "CHANGELOG.md",
    ]) {
      assert.ok(fs.existsSync(path.join(installed, file)), file);
    }
    assert.equal(fs.existsSync(path.join(installed, "bin", "test")), false);
    assert.equal(fs.existsSync(path.join(installed, "infra", "estate.ts")), false);
  });

  it("type-checks against the package's declaration files", () => {
    const r = spawnSync(path.join(program, "node_modules", ".bin", "tsc"), ["-p", program], {
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it("compiles the README's programs as written, against the package", () => {
    const readme = fs.readFileSync(path.join(REPO, "README.md"), "utf8");
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)]
      .map((m) => m[1])
      .filter((code) => code.includes('from "rke2-remediation"'));
    assert.equal(blocks.length, 2, "README.md's programs that import the package");
    const files = blocks.map((code, i) => {
      fs.writeFileSync(path.join(program, `readme-${i}.ts`), code);
      return `readme-${i}.ts`;
    });
    const tsconfig = JSON.parse(fs.readFileSync(path.join(program, "tsconfig.json"), "utf8")) as {
      files: string[];
    };
    fs.writeFileSync(
      path.join(program, "tsconfig.readme.json"),
      JSON.stringify({ ...tsconfig, files }),
    );
    const r = spawnSync(
      path.join(program, "node_modules", ".bin", "tsc"),
      ["-p", path.join(program, "tsconfig.readme.json")],
      { encoding: "utf8" },
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it("resolves rke2-remediation/components under moduleResolution node as under node16", () => {
    fs.writeFileSync(
      path.join(program, "components-import.ts"),
      'import { NodePreparations } from "rke2-remediation/components";\nexport const kind = NodePreparations.name;\n',
    );
    const tsconfig = JSON.parse(fs.readFileSync(path.join(program, "tsconfig.json"), "utf8")) as {
      compilerOptions: Record<string, unknown>;
    };
    for (const [module, moduleResolution] of [
      ["commonjs", "node"],
      ["node16", "node16"],
    ]) {
      const file = path.join(program, `tsconfig.${moduleResolution}.json`);
      fs.writeFileSync(
        file,
        JSON.stringify({
          ...tsconfig,
          compilerOptions: { ...tsconfig.compilerOptions, module, moduleResolution },
          files: ["components-import.ts"],
        }),
      );
      const r = spawnSync(path.join(program, "node_modules", ".bin", "tsc"), ["-p", file], {
        encoding: "utf8",
      });
      assert.equal(r.status, 0, `${moduleResolution}: ${r.stdout}${r.stderr}`);
    }
  });

  it("previews a lab server's preparation and DNS fix through the package's own providers", () => {
    const run = (args: string[], input?: string) => {
      const r = pulumiIn(program, STACK, args, input);
      assert.equal(r.status, 0, `pulumi ${args.join(" ")}:\n${r.out}`);
      return r.out;
    };
    const init = spawnSync("pulumi", ["stack", "init", STACK, "--non-interactive"], {
      cwd: program,
      encoding: "utf8",
    });
    assert.equal(init.status, 0, init.stdout + init.stderr);
    const server = {
      name: "sza122020.local",
      ip: "192.168.122.20",
      hostKey: hostKeyIn(path.join(LAB_DIR, "nodes", "n20", "ssh")),
    };
    run(["config", "set", "server", JSON.stringify(server)]);
    run(["config", "set", "--path", "upstreamResolvers[0]", "192.168.122.1"]);
    // The program keeps its key under a config key of its own (sshPrivateKeyConfig).
    run(["config", "set", "--secret", "opsSshKey"], operatorKey());
    const out = run(["preview", "--json"]);
    const plan = JSON.parse(out.slice(out.indexOf("{"), out.lastIndexOf("}") + 1)) as {
      steps: { op: string; urn: string; newState?: { inputs?: Record<string, unknown> } }[];
    };
    // Every host step names the config key the provider reads the program's key from, and keeps
    // only the key's fingerprint.
    const hostSteps = plan.steps.filter((s) => s.newState?.inputs?.sshKeyFingerprint);
    assert.ok(hostSteps.length >= 3, `${hostSteps.length} host steps`);
    for (const step of hostSteps) {
      assert.equal(step.newState?.inputs?.sshKeyConfig, "one-server:opsSshKey", step.urn);
      assert.equal(JSON.stringify(step.newState).includes("PRIVATE KEY"), false, step.urn);
    }
    // urn:pulumi:<stack>::<project>::<parent types $ ... $ type>::<name>
    const planned = plan.steps.map((step) => {
      const [, , types, name] = step.urn.split("::");
      const chain = types.split("$");
      return { op: step.op, chain, type: chain[chain.length - 1], name };
    });
    const listing = planned.map((p) => `${p.op} ${p.chain.join("$")}::${p.name}`).join("\n");
    assert.deepEqual([...new Set(planned.map((p) => p.op))], ["create"], listing);
    const find = (type: string, name: string) =>
      planned.find((p) => p.type === type && p.name === name);
    assert.ok(find("rke2remediation:estate:Rke2Estate", "one-server"), listing);
    // Each host step's provider loads from the installed package: the engine checks every
    // planned resource with it in the preview.
    for (const [type, name] of [
      [NODE_PREPARATION.token, "one-server-prepare-sza122020.local-host"],
      [UPSTREAM_PREFLIGHT.token, "one-server-upstream-resolvers-check"],
      [REMOTE_FILE.token, "one-server-dns-management-manifest-file"],
    ]) {
      const step = find(type, name);
      assert.ok(step, `${type}::${name} planned\n${listing}`);
      assert.equal(
        step.chain[0],
        "rke2remediation:estate:Rke2Estate",
        `${name} sits in the estate`,
      );
    }
  });
});
