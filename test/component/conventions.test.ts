/**
 * CONVENTIONS.md's rules as the recorded program shows them: components give children
 * `{ parent: this }` and names derived from their own; component types are three-part
 * `rke2remediation:<module>:<Thing>` tokens; every script a resource ships to a host is a file in
 * the repo next to its component, never text built in code, and state names it by path and hash.
 */
import * as assert from "assert/strict";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { RecordedResource } from "../../components/model";
import { labResources } from "../support/program";

const REPO_ROOT = path.resolve(__dirname, "..", "..", "..");
const COMPONENTS = path.join(REPO_ROOT, "components");
/** Inputs that carry a host script. */
const SCRIPT_INPUTS = ["script", "checkScript", "factsScript", "membersScript"];

function shellFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const file = path.join(dir, e.name);
    if (e.isDirectory()) return shellFiles(file);
    return e.name.endsWith(".sh") ? [file] : [];
  });
}

describe("conventions in the recorded program", function () {
  this.timeout(60000);
  let resources: RecordedResource[];

  before(async () => {
    resources = await labResources();
  });

  it("names each component's children after the component", () => {
    const byUrn = new Map(resources.map((r) => [r.urn, r]));
    const strays = resources
      .filter((r) => byUrn.get(r.parent)?.type.startsWith("rke2remediation:"))
      .filter((r) => !r.name.startsWith(byUrn.get(r.parent)!.name))
      .map((r) => `${r.name} under ${byUrn.get(r.parent)!.name}`);
    assert.deepEqual(strays, []);
  });

  it("gives every component a three-part rke2remediation:<module>:<Thing> type", () => {
    const components = resources.filter((r) => !r.custom && r.type.startsWith("rke2remediation"));
    assert.ok(components.length > 0);
    for (const c of components)
      assert.match(c.type, /^rke2remediation:[a-z0-9]+:[A-Z][A-Za-z0-9]+$/);
  });

  it("ships only scripts that are files under components/, recorded by path and hash", () => {
    const files = new Map(
      shellFiles(COMPONENTS).map((f) => [path.relative(REPO_ROOT, f).split(path.sep).join("/"), f]),
    );
    const shipped = resources.flatMap((r) =>
      SCRIPT_INPUTS.filter((k) => typeof r.inputs[k] === "string").map((k) => ({
        where: `${r.name}.${k}`,
        ref: r.inputs[k] as string,
      })),
    );
    assert.ok(shipped.length > 0, "no resource ships a script");
    const notFiles = shipped
      .filter((s) => {
        const m = /^(components\/[^@]+)@sha256:([0-9a-f]{64}) \(rke2-remediation [0-9.]+\)$/.exec(
          s.ref,
        );
        const file = m && files.get(m[1]);
        if (!m || !file) return true;
        const digest = crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
        return digest !== m[2];
      })
      .map((s) => s.where);
    assert.deepEqual(notFiles, [], "scripts that are not a file under components/ with its hash");
  });
});
