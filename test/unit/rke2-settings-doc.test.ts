import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import {
  ARG_LIST_FLAGS_MANAGED,
  FIXED_ON_RUNNING_CLUSTER,
  MANAGED_RKE2_KEYS,
  REFUSED_PASS_THROUGH,
} from "../../components/rke2-cluster/settings";

const DOC = path.join(__dirname, "..", "..", "..", "docs", "configuration.md");

/** The tables of the docs' RKE2 settings section, by header row: each row's two cells. */
function sectionTables(): Map<string, [string, string][]> {
  const text = fs.readFileSync(DOC, "utf8");
  const start = text.indexOf("\n## RKE2 settings");
  assert.ok(start >= 0, "docs/configuration.md has no RKE2 settings section");
  const end = text.indexOf("\n## ", start + 1);
  const tables = new Map<string, [string, string][]>();
  let rows: [string, string][] | undefined;
  for (const line of text.slice(start, end).split("\n")) {
    if (/^\|-/.test(line)) continue;
    const cells = /^\| (.*) \| (.*) \|$/.exec(line);
    if (!cells) {
      rows = undefined;
      continue;
    }
    if (rows === undefined) tables.set(`${cells[1]} | ${cells[2]}`, (rows = []));
    else rows.push([cells[1], cells[2]]);
  }
  return tables;
}

describe("docs/configuration.md's RKE2 settings section, held to components/rke2-cluster/settings.ts", () => {
  const tables = sectionTables();
  const table = (header: string) => {
    const rows = tables.get(header);
    assert.ok(rows, `no table headed "${header}"`);
    return rows;
  };

  it("lists every managed key and managed *-arg flag with the stack key that sets it, and no other", () => {
    const expected = [
      ...Object.entries(MANAGED_RKE2_KEYS).map(([key, by]) => [`\`${key}\``, by]),
      ...Object.entries(ARG_LIST_FLAGS_MANAGED).flatMap(([list, flags]) =>
        Object.entries(flags).map(([flag, by]) => [`\`${list}\` entry \`${flag}=\``, by]),
      ),
    ];
    assert.deepEqual(table("config.yaml key | set by"), expected);
  });

  it("lists every key refused in pass-through, and no other", () => {
    assert.deepEqual(
      table("key | refused because").map(([key]) => key),
      Object.keys(REFUSED_PASS_THROUGH).map((k) => `\`${k}\``),
    );
  });

  it("lists every key a running cluster cannot change with what sets it, and no other", () => {
    assert.deepEqual(
      table("key | set by"),
      Object.entries(FIXED_ON_RUNNING_CLUSTER).map(([key, by]) => [`\`${key}\``, by]),
    );
  });
});
