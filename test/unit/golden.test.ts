/**
 * Golden files: test/golden/<stack>/ holds what `npm run render` writes for each shipped stack:
 * the configuration it puts on hosts and into clusters (RKE2 configs, node preparation, libvirt
 * records, the cluster DNS objects, Rancher's rkeConfig), the restart and registration plans, and
 * the lab stack's `rancher` output, from which uat1 (`managementStack: .../lab`) is rendered. The step scripts that carry them out (rke2-start.sh, join-gate.sh, register-node.sh,
 * network.sh, the preflights) ship as they are in components/ and are not rendered. A change to
 * any rendered file fails here until the golden files are rewritten (`npm run golden`) and
 * committed, so that such a change shows in review as a diff of those files.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const REPO = path.resolve(__dirname, "..", "..", "..");
/** The shipped stacks in the order they render: a referencing stack after the one it names. */
const STACKS: readonly { stack: string; managementOutputsOf?: string }[] = [
  { stack: "lab" },
  { stack: "uat1", managementOutputsOf: "lab" },
];
const REWRITE = "npm run golden";
const AFTER_REVIEW = `if the change is intended, rewrite the golden files with \`${REWRITE}\`, review their diff and commit it`;

interface RenderedFile {
  readonly content: Buffer;
  readonly executable: boolean;
}

/** Every file below `dir` by its path relative to it (with `/`), sorted. */
function filesUnder(dir: string): Map<string, RenderedFile> {
  const files = new Map<string, RenderedFile>();
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else {
        const full = path.join(dir, child);
        files.set(child, {
          content: fs.readFileSync(full),
          executable: (fs.statSync(full).mode & 0o100) !== 0,
        });
      }
    }
  };
  walk("");
  return new Map([...files].sort(([a], [b]) => a.localeCompare(b)));
}

/** The first line at which two texts differ, both versions quoted. */
function firstDifference(golden: string, rendered: string): string {
  const a = golden.split("\n");
  const b = rendered.split("\n");
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) {
      const quote = (line: string | undefined) =>
        line === undefined ? "(end of file)" : JSON.stringify(line);
      return `line ${i + 1}: golden ${quote(a[i])}, rendered ${quote(b[i])}`;
    }
  }
  return "no line differs (line endings or a final newline do)";
}

for (const { stack, managementOutputsOf } of STACKS) {
  const GOLDEN = `test/golden/${stack}`;
  describe(`golden files: render --stack ${stack} matches ${GOLDEN}`, function () {
    this.timeout(60000);
    let out: string;
    let rendered: Map<string, RenderedFile>;
    let golden: Map<string, RenderedFile>;

    before(() => {
      out = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-golden-"));
      // The compiled CLI, as `npm run render` runs it, into an empty directory: no earlier
      // restart plan to compare with. The management stack's outputs come from its own render.
      const managementArgs: string[] = [];
      if (managementOutputsOf) {
        const management = path.join(out, "..", `${path.basename(out)}-${managementOutputsOf}`);
        render(managementOutputsOf, [], management);
        managementArgs.push(
          "--management-outputs",
          path.join(management, "stack", "management-outputs.json"),
        );
      }
      render(stack, managementArgs, out);
      rendered = filesUnder(out);
      assert.ok(
        fs.existsSync(path.join(REPO, GOLDEN)),
        `${GOLDEN} is missing; write it with \`${REWRITE}\``,
      );
      golden = filesUnder(path.join(REPO, GOLDEN));
    });

    after(() => {
      if (!out) return;
      fs.rmSync(out, { recursive: true, force: true });
      if (managementOutputsOf)
        fs.rmSync(`${out}-${managementOutputsOf}`, { recursive: true, force: true });
    });

    it("renders no file that the golden files lack", () => {
      const extra = [...rendered.keys()].filter((f) => !golden.has(f));
      assert.deepEqual(
        extra,
        [],
        `render writes files that ${GOLDEN} lacks: ${extra.join(", ")}; ${AFTER_REVIEW}`,
      );
    });

    it("renders every file the golden files hold", () => {
      const missing = [...golden.keys()].filter((f) => !rendered.has(f));
      assert.deepEqual(
        missing,
        [],
        `render no longer writes these files of ${GOLDEN}: ${missing.join(", ")}; ${AFTER_REVIEW}`,
      );
    });

    it("renders each file byte for byte as its golden copy", () => {
      const differing: string[] = [];
      for (const [file, now] of rendered) {
        const kept = golden.get(file);
        if (kept && !kept.content.equals(now.content)) {
          differing.push(
            `${GOLDEN}/${file} (${firstDifference(kept.content.toString("utf8"), now.content.toString("utf8"))})`,
          );
        }
      }
      assert.deepEqual(
        differing,
        [],
        `render output differs: ${differing.join("; ")}; ${AFTER_REVIEW}`,
      );
    });

    it("renders executable exactly the files that are executable in the golden copy", () => {
      const differing = [...rendered]
        .filter(
          ([file, now]) => golden.has(file) && golden.get(file)!.executable !== now.executable,
        )
        .map(
          ([file, now]) => `${GOLDEN}/${file} (${now.executable ? "now" : "no longer"} executable)`,
        );
      assert.deepEqual(
        differing,
        [],
        `file modes differ: ${differing.join("; ")}; ${AFTER_REVIEW}`,
      );
    });
  });
}

/** `render --stack <stack> <args> --out <out>` through the compiled CLI; fails the test if it fails. */
function render(stack: string, args: readonly string[], out: string): void {
  const r = spawnSync(
    process.execPath,
    [path.join(REPO, "bin", "infra", "cli", "render.js"), "--stack", stack, ...args, "--out", out],
    { cwd: REPO, encoding: "utf8" },
  );
  assert.equal(r.status, 0, `render --stack ${stack} failed: ${r.stderr}`);
}
