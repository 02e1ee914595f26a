/**
 * CONVENTIONS.md's rules that a reader of the source can check mechanically: one policy per
 * file with a test file per policy, kebab-case names, descriptions as sentences; components
 * list every public output again in registerOutputs and name their type in three parts.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { allPolicies } from "../../policy/policies";

const ROOT = path.resolve(__dirname, "..", "..", "..");

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(rel);
    return e.name.endsWith(".ts") ? [rel] : [];
  });
}

/** Each `class X extends pulumi.ComponentResource { ... }` in a file, with its body. */
function componentClasses(file: string): { name: string; body: string }[] {
  const source = fs.readFileSync(path.join(ROOT, file), "utf8");
  const found: { name: string; body: string }[] = [];
  const head = /export class (\w+) extends pulumi\.ComponentResource \{\n/g;
  for (const match of source.matchAll(head)) {
    const start = match.index! + match[0].length;
    const end = source.indexOf("\n}\n", start);
    found.push({ name: match[1], body: source.slice(start, end) });
  }
  return found;
}

describe("conventions", () => {
  describe("policies (one per file, a test file each, names that say the rule)", () => {
    for (const policy of allPolicies) {
      it(`${policy.name}: kebab-case, in its own file, with its own test file`, () => {
        assert.match(policy.name, /^[a-z0-9]+(-[a-z0-9]+)*$/);
        const file = path.join(ROOT, "policy", "policies", `${policy.name}.ts`);
        assert.ok(fs.existsSync(file), `policy/policies/${policy.name}.ts is missing`);
        assert.ok(
          fs.readFileSync(file, "utf8").includes(`name: "${policy.name}"`),
          `policy/policies/${policy.name}.ts does not define ${policy.name}`,
        );
        const test = path.join(ROOT, "test", "policy", `${policy.name}.test.ts`);
        assert.ok(fs.existsSync(test), `test/policy/${policy.name}.test.ts is missing`);
      });

      it(`${policy.name}: its description is a complete sentence`, () => {
        assert.match(policy.description ?? "", /^[A-Za-z0-9].*[.]$/s);
      });
    }
  });

  describe("components (three-part type tokens, public outputs registered)", () => {
    const classes = sourceFiles("components").flatMap((file) =>
      componentClasses(file).map((c) => ({ file, ...c })),
    );

    it("finds the component classes it checks", () => {
      assert.ok(classes.length >= 8, `only ${classes.map((c) => c.name).join(", ")}`);
    });

    for (const { file, name, body } of classes) {
      it(`${name} (${file}): super("rke2remediation:<module>:<Thing>", name, {}, opts)`, () => {
        assert.match(
          body,
          /super\("rke2remediation:[a-z0-9]+:[A-Z][A-Za-z0-9]+", name, \{\}, opts\)/,
        );
      });

      it(`${name} (${file}): every public output is listed in registerOutputs`, () => {
        const outputs = [...body.matchAll(/^ {2}public readonly (\w+): pulumi\.Output</gm)].map(
          (m) => m[1],
        );
        const registered = /this\.registerOutputs\(\{([\s\S]*?)\}\);/.exec(body)?.[1] ?? "";
        const missing = outputs.filter((o) => !new RegExp(`\\b${o}\\b`).test(registered));
        assert.deepEqual(missing, [], `${name} does not register ${missing.join(", ")}`);
      });
    }
  });
});
