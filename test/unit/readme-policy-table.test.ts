/**
 * The policy table (docs/policies.md, section "The pack", which the README's section on policies
 * in pull requests links to) is what operators read to know what blocks a preview: it must list
 * exactly the pack's policies (policy/policies, which policy/index.ts packs whole), each with its
 * enforcement level.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { allPolicies } from "../../policy/policies";

const DOC = "docs/policies.md";
const DOC_PATH = path.resolve(__dirname, "..", "..", "..", DOC);
const SECTION = "## The pack";

interface TableRow {
  readonly name: string;
  readonly level: string;
  readonly line: number;
}

/** The rows `| \`name\` | level | ... |` of the section's table, with their line numbers. */
function policyTableRows(markdown: string): TableRow[] {
  const lines = markdown.split("\n");
  const start = lines.indexOf(SECTION);
  assert.ok(start >= 0, `${DOC} has no section "${SECTION}"`);
  const rows: TableRow[] = [];
  for (let i = start + 1; i < lines.length && !lines[i].startsWith("## "); i++) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|/.exec(lines[i]);
    if (m) rows.push({ name: m[1], level: m[2], line: i + 1 });
  }
  return rows;
}

describe("the policy table in docs/policies.md", () => {
  const rows = policyTableRows(fs.readFileSync(DOC_PATH, "utf8"));
  // (A policy without its own level would take the pack's; every policy here states its own.)
  const pack = new Map(
    allPolicies.map((p) => [p.name, p.enforcementLevel ?? "(not set in the policy)"]),
  );

  it("has a row for every policy of the pack", () => {
    const listed = new Set(rows.map((r) => r.name));
    const missing = [...pack].filter(([name]) => !listed.has(name));
    assert.deepEqual(
      missing.map(([name, level]) => `${name} (${level})`),
      [],
      `${DOC} "${SECTION}" lacks rows for these policies of policy/policies`,
    );
  });

  it("has no row for a policy the pack lacks, and no policy twice", () => {
    const seen = new Set<string>();
    const wrong: string[] = [];
    for (const row of rows) {
      if (!pack.has(row.name)) wrong.push(`${row.name} (${DOC} line ${row.line}: not in the pack)`);
      else if (seen.has(row.name))
        wrong.push(`${row.name} (${DOC} line ${row.line}: listed again)`);
      seen.add(row.name);
    }
    assert.deepEqual(wrong, [], `${DOC} "${SECTION}" has rows to remove`);
  });

  it("gives each policy the enforcement level the pack gives it", () => {
    const wrong = rows
      .filter((r) => pack.has(r.name) && pack.get(r.name) !== r.level)
      .map(
        (r) =>
          `${r.name} (${DOC} line ${r.line} says "${r.level}", the pack says "${pack.get(r.name)}")`,
      );
    assert.deepEqual(wrong, [], `${DOC} "${SECTION}" has wrong levels`);
  });
});
