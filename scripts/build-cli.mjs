#!/usr/bin/env node
// What `npm run verify` and `npm run render` run first: the product's TypeScript (infra/,
// components/, policy/; no tests) turned into bin/ as plain JavaScript, each file only when its
// source is newer than what bin/ holds. It checks no types: `npm run build` (tsc, every file,
// tests included) does, and so does the test suite's types tier. A run with nothing to do takes
// well under a second, where a type-checking build takes 15 s or more.
//
//   node scripts/build-cli.mjs
import * as fs from "fs";
import * as path from "path";
import { fileURLToPath } from "url";
import { transformSync } from "esbuild";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SOURCES = ["infra", "components", "policy"];
const SKIP = new Set(["node_modules", "bin"]);

function* typescriptFiles(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* typescriptFiles(file);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) yield file;
  }
}

// tsconfig.json's emit: CommonJS for ES2022, class fields defined as ES2022 defines them.
const OPTIONS = {
  loader: "ts",
  format: "cjs",
  target: "es2022",
  platform: "node",
  tsconfigRaw: { compilerOptions: { useDefineForClassFields: true, esModuleInterop: true } },
};

let built = 0;
for (const top of SOURCES) {
  for (const source of typescriptFiles(path.join(repo, top))) {
    const relative = path.relative(repo, source);
    const out = path.join(repo, "bin", relative.replace(/\.ts$/, ".js"));
    const have = fs.statSync(out, { throwIfNoEntry: false });
    if (have && have.mtimeMs >= fs.statSync(source).mtimeMs) continue;
    let code;
    try {
      ({ code } = transformSync(fs.readFileSync(source, "utf8"), {
        ...OPTIONS,
        sourcefile: relative,
      }));
    } catch (e) {
      console.error(`build-cli: ${relative} does not compile: ${e.message}`);
      process.exit(1);
    }
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, code);
    built++;
  }
}
if (process.env.RKE2R_BUILD_CLI_VERBOSE) console.error(`build-cli: ${built} file(s) built`);
