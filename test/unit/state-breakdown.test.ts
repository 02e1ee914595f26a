/**
 * scripts/state-breakdown.mjs, the table docs/benchmarks.md shows of what a stack's state holds:
 * sizes per resource type and field, from either form of a state, and never a value.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const SCRIPT = path.join(__dirname, "..", "..", "..", "scripts", "state-breakdown.mjs");

function breakdown(doc: unknown): { status: number | null; out: string } {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-state-")), "state.json");
  fs.writeFileSync(file, JSON.stringify(doc));
  const r = spawnSync(process.execPath, [SCRIPT, file, "--fields", "2"], { encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe("scripts/state-breakdown.mjs", () => {
  const step = (n: number) => ({
    urn: `urn:pulumi:s::p::t$pulumi-nodejs:dynamic/node:Preparation::n${n}`,
    type: "pulumi-nodejs:dynamic/node:Preparation",
    inputs: { node: `n${n}`, key: "s3cr3t-value-never-printed".repeat(10) },
    outputs: { node: `n${n}` },
  });
  const resources = [step(1), step(2), { urn: "urn:s", type: "pulumi:pulumi:Stack" }];

  it("sizes each type and its largest fields, from an export and from a file backend's stack", () => {
    for (const doc of [{ deployment: { resources } }, { checkpoint: { latest: { resources } } }]) {
      const r = breakdown(doc);
      assert.equal(r.status, 0, r.out);
      assert.match(r.out, /^3 resources, /);
      const row = r.out.split("\n").find((l) => l.startsWith("| pulumi-nodejs:dynamic/node"));
      assert.ok(row, r.out);
      const key = Buffer.byteLength(JSON.stringify(step(1).inputs.key));
      assert.match(row, new RegExp(`\\| 2 \\| .* \\| inputs\\.key ${key} B, urn \\d+ B \\|$`));
      assert.doesNotMatch(r.out, /s3cr3t/);
    }
  });

  it("refuses a file that is not a state", () => {
    const r = breakdown({ resources });
    assert.equal(r.status, 1);
    assert.match(r.out, /no deployment\.resources or checkpoint\.latest\.resources/);
  });
});
