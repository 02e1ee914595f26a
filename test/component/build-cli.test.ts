/**
 * `npm run verify` and `npm run render` build with scripts/build-cli.mjs (esbuild, no type check)
 * instead of tsc. What that build runs must answer as tsc's output does: the same report for the
 * shipped stacks and the same files rendered. A checkout's sources are copied, built by the script
 * alone, and run beside this suite's tsc build.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const REPO = path.resolve(__dirname, "..", "..", "..");
const TSC_CLI = path.join(REPO, "bin", "infra", "cli");
const MANAGEMENT_OUTPUTS = path.join(
  REPO,
  "test",
  "golden",
  "lab",
  "stack",
  "management-outputs.json",
);

function run(cwd: string, file: string, args: string[]) {
  const r = spawnSync(process.execPath, [file, ...args], {
    cwd,
    encoding: "utf8",
    timeout: 120000,
  });
  return { status: r.status, stdout: r.stdout, out: `${r.stdout}${r.stderr}` };
}

/** Every file under DIR, relative to it, with its content. */
function tree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (sub: string) => {
    for (const e of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.join(sub, e.name);
      if (e.isDirectory()) walk(rel);
      else files.set(rel, fs.readFileSync(path.join(dir, rel), "utf8"));
    }
  };
  walk("");
  return files;
}

describe("the offline commands' own build (scripts/build-cli.mjs)", function () {
  this.timeout(120000);
  let copy: string;
  let cli: string;

  before(() => {
    copy = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-build-cli-"));
    for (const part of ["infra", "components", "policy", "stacks", "scripts", "package.json"]) {
      fs.cpSync(path.join(REPO, part), path.join(copy, part), {
        recursive: true,
        filter: (from) => !/[/\\](node_modules|bin)$/.test(from),
      });
    }
    fs.symlinkSync(path.join(REPO, "node_modules"), path.join(copy, "node_modules"));
    fs.symlinkSync(
      path.join(REPO, "policy", "node_modules"),
      path.join(copy, "policy", "node_modules"),
    );
    const built = run(copy, path.join(copy, "scripts", "build-cli.mjs"), []);
    assert.equal(built.status, 0, built.out);
    cli = path.join(copy, "bin", "infra", "cli");
  });
  after(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("builds no test and no type declarations, only the product's JavaScript", () => {
    assert.ok(fs.existsSync(path.join(cli, "verify.js")));
    assert.ok(!fs.existsSync(path.join(copy, "bin", "test")));
    const files = [...tree(path.join(copy, "bin")).keys()];
    assert.deepEqual(
      files.filter((f) => !f.endsWith(".js")),
      [],
    );
  });

  for (const [stack, extra] of [
    ["lab", []],
    ["uat1", ["--management-outputs", MANAGEMENT_OUTPUTS]],
  ] as const) {
    it(`verify --json of the ${stack} stack reports what tsc's build reports`, () => {
      const args = ["--stack", stack, "--json", ...extra];
      const mine = run(copy, path.join(cli, "verify.js"), args);
      const tsc = run(REPO, path.join(TSC_CLI, "verify.js"), args);
      assert.equal(mine.status, tsc.status, mine.out);
      assert.deepEqual(JSON.parse(mine.stdout), JSON.parse(tsc.stdout));
    });
  }

  it("render of the lab stack writes the golden files", () => {
    const out = path.join(copy, "render-lab");
    const r = run(copy, path.join(cli, "render.js"), ["--stack", "lab", "--out", out]);
    assert.equal(r.status, 0, r.out);
    const golden = tree(path.join(REPO, "test", "golden", "lab"));
    const mine = tree(out);
    assert.deepEqual([...mine.keys()].sort(), [...golden.keys()].sort());
    for (const [file, text] of golden) assert.equal(mine.get(file), text, file);
  });

  it("a second run rebuilds only a source newer than its output", () => {
    const source = path.join(copy, "infra", "cli", "verify.ts");
    const out = path.join(cli, "verify.js");
    const other = path.join(cli, "render.js");
    const before = { out: fs.statSync(out).mtimeMs, other: fs.statSync(other).mtimeMs };
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(source, later, later);
    const r = run(copy, path.join(copy, "scripts", "build-cli.mjs"), []);
    assert.equal(r.status, 0, r.out);
    assert.ok(fs.statSync(out).mtimeMs > before.out, "verify.js was not rebuilt");
    assert.equal(fs.statSync(other).mtimeMs, before.other, "render.js was rebuilt");
  });
});
