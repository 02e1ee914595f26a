#!/usr/bin/env node
// The suite's time, read from the output of `.ci/run` or `npm test`: each tier's wall time (the
// "== tier <name>: passed in <n> s" lines test/run-tiers prints), setup's time (.ci/run's
// "ci: setup took <n> s") and the ten slowest cases (mocha's "(<n>ms)" after a passed case),
// each under the describe block it belongs to.
//
//   node scripts/test-times.mjs <log>                               prints the tables
//   node scripts/test-times.mjs <log> --write docs/development.md   replaces the tables there
//                                                                   (between the test-times marks)
import * as fs from "fs";

const [logFile, flag, target] = process.argv.slice(2);
if (!logFile || (flag !== undefined && (flag !== "--write" || !target))) {
  console.error("usage: node scripts/test-times.mjs <log> [--write <markdown file>]");
  process.exit(2);
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
const lines = fs.readFileSync(logFile, "utf8").replace(ANSI, "").split("\n");

const tiers = [];
const cases = [];
let tier = "";
// The describe titles above the current line, by indentation.
let blocks = [];
for (const line of lines) {
  const setup = /^ci: setup took (\d+) s$/.exec(line);
  if (setup) tiers.push({ name: "setup (.ci/run)", result: "done", seconds: Number(setup[1]) });
  const done = /^== tier (.+): (passed|FAILED) in (\d+) s$/.exec(line);
  if (done) {
    tiers.push({ name: done[1], result: done[2], seconds: Number(done[3]) });
    continue;
  }
  const started = /^== tier ([^:]+)$/.exec(line) ?? /^== tier (.+): bin\//.exec(line);
  if (started) {
    tier = started[1];
    blocks = [];
    continue;
  }
  const indent = line.length - line.trimStart().length;
  const text = line.trim();
  const passed = /^✔ (.*) \((\d+)ms\)$/.exec(text);
  if (passed) {
    const block = blocks.filter((b) => b.indent < indent).pop();
    cases.push({ tier, block: block?.title ?? "", title: passed[1], ms: Number(passed[2]) });
  } else if (
    text &&
    indent >= 2 &&
    !/^(✔|\d+\)|\d+ (passing|failing|pending))/.test(text) &&
    /^[A-Za-z`"'.(]/.test(text)
  ) {
    blocks = blocks.filter((b) => b.indent < indent);
    blocks.push({ indent, title: text });
  }
}

const total = /^ci: finished in (\d+) s$/m.exec(lines.join("\n"));
const seconds = (ms) => (ms / 1000).toFixed(1);
const cell = (text) => text.replace(/\|/g, "\\|");
const table = [
  "| tier | result | wall time (s) |",
  "|---|---|---:|",
  ...tiers.map((t) => `| ${t.name} | ${t.result} | ${t.seconds} |`),
  ...(total ? [`| all of .ci/run | | ${total[1]} |`] : []),
  "",
  "The ten slowest cases:",
  "",
  "| tier | case | time (s) |",
  "|---|---|---:|",
  ...cases
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10)
    .map(
      (c) =>
        `| ${c.tier} | ${cell(c.block ? `${c.block}: ${c.title}` : c.title)} | ${seconds(c.ms)} |`,
    ),
].join("\n");

if (!flag) {
  console.log(table);
} else {
  const BEGIN = "<!-- test-times:begin -->";
  const END = "<!-- test-times:end -->";
  const doc = fs.readFileSync(target, "utf8");
  const from = doc.indexOf(BEGIN);
  const to = doc.indexOf(END);
  if (from < 0 || to < from) {
    console.error(`${target} has no ${BEGIN} ... ${END} section to replace`);
    process.exit(1);
  }
  fs.writeFileSync(target, `${doc.slice(0, from + BEGIN.length)}\n${table}\n${doc.slice(to)}`);
  console.log(`wrote the suite's times to ${target}`);
}
