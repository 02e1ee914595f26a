#!/usr/bin/env node
// What a stack's state holds: for each resource type, how many resources, their size in the
// state (compact JSON, as the checkpoint's resources are written) and the fields that take most
// of it. Reads `pulumi stack export` output or a file backend's stack file.
//
//   node scripts/state-breakdown.mjs <state.json> [--fields <n>]
//
// Secret values are never printed: only field names and sizes.
import * as fs from "fs";

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith("--"));
const fieldsAt = args.indexOf("--fields");
const topFields = fieldsAt >= 0 ? Number(args[fieldsAt + 1]) : 4;
if (!file || !Number.isInteger(topFields) || topFields < 0) {
  console.error("usage: node scripts/state-breakdown.mjs <state.json> [--fields <n>]");
  process.exit(2);
}

const doc = JSON.parse(fs.readFileSync(file, "utf8"));
// `pulumi stack export` writes {deployment: {resources}}; a file backend {checkpoint: {latest}}.
const resources = doc.deployment?.resources ?? doc.checkpoint?.latest?.resources;
if (!Array.isArray(resources)) {
  console.error(`${file}: no deployment.resources or checkpoint.latest.resources`);
  process.exit(1);
}

const size = (value) => Buffer.byteLength(JSON.stringify(value ?? null));
const byType = new Map();
for (const r of resources) {
  const entry = byType.get(r.type) ?? { count: 0, bytes: 0, fields: new Map() };
  entry.count += 1;
  entry.bytes += size(r);
  for (const [key, value] of Object.entries(r)) {
    if (key === "inputs" || key === "outputs") {
      for (const [name, v] of Object.entries(value ?? {}))
        entry.fields.set(`${key}.${name}`, (entry.fields.get(`${key}.${name}`) ?? 0) + size(v));
    } else entry.fields.set(key, (entry.fields.get(key) ?? 0) + size(value));
  }
  byType.set(r.type, entry);
}

const total = resources.reduce((sum, r) => sum + size(r), 0);
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
console.log(`${resources.length} resources, ${kb(total)} (compact JSON)\n`);
console.log("| type | count | each | all | largest fields (each) |");
console.log("|---|---:|---:|---:|---|");
for (const [type, e] of [...byType].sort((a, b) => b[1].bytes - a[1].bytes)) {
  const fields = [...e.fields]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topFields)
    .map(([name, bytes]) => `${name} ${Math.round(bytes / e.count)} B`)
    .join(", ");
  console.log(`| ${type} | ${e.count} | ${kb(e.bytes / e.count)} | ${kb(e.bytes)} | ${fields} |`);
}
