#!/usr/bin/env node
// `npm run policy:pack -- --out <dir>`: the CrossGuard pack as a folder that loads on its own,
// the folder `pulumi policy publish` uploads. policy/ imports the renderers and the model from
// components/; esbuild bundles them into one index.js, so only the pack's declared dependencies
// (@pulumi/policy and @pulumi/pulumi, left external: the Pulumi runtime loads them) are
// installed beside it. The folder gets PulumiPolicy.yaml for that JavaScript entry point,
// policy/'s package.json and package-lock.json, the LICENSE, and the node scripts under components/: a host
// step records its script by path and hash (components/assets.ts), and a policy that reads the
// script (firewall-service-never-stopped) finds it there, below the bundle's package root
// (lib/index.js: its parent folder is the root, as components/ has the repository's).
import * as fs from "fs";
import * as path from "path";
import { parseArgs } from "util";
import * as esbuild from "esbuild";

const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const { values } = parseArgs({ options: { out: { type: "string" } }, strict: true });
if (!values.out) {
  console.error("usage: npm run policy:pack -- --out <dir> (an empty or new directory)");
  process.exit(2);
}
const out = path.resolve(values.out);
if (fs.existsSync(out) && fs.readdirSync(out).length > 0) {
  console.error(`policy:pack: ${out} is not empty; give a new or empty directory`);
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });

const policy = path.join(repo, "policy");
const pkg = JSON.parse(fs.readFileSync(path.join(policy, "package.json"), "utf8"));
await esbuild.build({
  entryPoints: [path.join(policy, "index.ts")],
  bundle: true,
  platform: "node",
  target: "node22",
  format: "cjs",
  external: ["@pulumi/policy", "@pulumi/pulumi"],
  outfile: path.join(out, "lib", "index.js"),
  logLevel: "warning",
});
fs.writeFileSync(
  path.join(out, "package.json"),
  JSON.stringify({ ...pkg, main: "lib/index.js" }, null, 2) + "\n",
);
fs.copyFileSync(path.join(policy, "package-lock.json"), path.join(out, "package-lock.json"));
fs.copyFileSync(path.join(repo, "LICENSE"), path.join(out, "LICENSE"));
const manifest = fs
  .readFileSync(path.join(policy, "PulumiPolicy.yaml"), "utf8")
  .replace(/^main: .*$/m, "main: lib/index.js")
  .replace(/^\s*options:\n\s*typescript: true\n/m, "");
fs.writeFileSync(path.join(out, "PulumiPolicy.yaml"), manifest);
const scripts = fs
  .readdirSync(path.join(repo, "components"), { recursive: true })
  .filter((f) => f.endsWith(".sh"));
for (const file of scripts) {
  fs.mkdirSync(path.dirname(path.join(out, "components", file)), { recursive: true });
  fs.copyFileSync(path.join(repo, "components", file), path.join(out, "components", file));
}
console.log(
  `policy:pack: wrote ${out}: lib/index.js, PulumiPolicy.yaml, package.json, package-lock.json, LICENSE, ` +
    `${scripts.length} scripts under components/`,
);
