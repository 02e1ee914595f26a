/**
 * The layer rules of CONVENTIONS.md ("Layers point down"), as lint holds them: each case lints a
 * one-line import at a path inside the tree and expects the rule to refuse or allow it. And the
 * offline render path, run for real, loads no Pulumi SDK.
 */
import * as assert from "assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import { builtinModules } from "module";
import * as os from "os";
import * as path from "path";
import { ESLint } from "eslint";

const ROOT = path.resolve(__dirname, "..", "..", "..");

/** The bare module names the source files reachable from `entry` import, following relative imports. */
function packagesReachedFrom(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = fs.readFileSync(file, "utf8");
    const specs = [
      ...source.matchAll(/^(?:import|export)[^;]*?from "([^"]+)";/gms),
      ...source.matchAll(/^import "([^"]+)";/gm),
      ...source.matchAll(/\b(?:require|import)\("([^"]+)"\)/g),
    ].map((m) => m[1]);
    for (const spec of specs) {
      if (spec.startsWith(".")) {
        const base = path.resolve(path.dirname(file), spec);
        visit(fs.existsSync(`${base}.ts`) ? `${base}.ts` : path.join(base, "index.ts"));
      } else if (!builtinModules.includes(spec)) {
        packages.add(
          spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0],
        );
      }
    }
  };
  visit(path.join(ROOT, entry));
  return packages;
}

async function restrictedImports(file: string, source: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintText(source, { filePath: path.join(ROOT, file) });
  return result.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

const refused: [string, string, RegExp][] = [
  ["components/cluster-dns/chart.ts", 'import "@pulumi/pulumi";\n', /loads no Pulumi SDK/],
  ["components/cluster-dns/chart.ts", 'import "../remote-file";\n', /folder's index declares/],
  ["components/rke2-cluster/config.ts", 'import "./provider";\n', /imports no resource file/],
  ["components/rke2-cluster/config.ts", 'import "./provider.js";\n', /imports no resource file/],
  ["components/cluster-dns/chart.ts", 'import "../remote-file/";\n', /folder's index declares/],
  ["components/cluster-dns/chart.ts", 'import "./";\n', /folder's index declares/],
  [
    "components/cluster-dns/chart.ts",
    'import "../../policy/policies";\n',
    /never import the policy/,
  ],
  ["infra/cli/render.ts", 'import "../config/load";\n', /neither the program nor/],
  ["components/rke2-cluster/index.ts", 'import "../../infra/program";\n', /never import infra/],
  ["components/model/net.ts", 'import "../assets";\n', /outside components\/model/],
  ["policy/policies/coredns-config.ts", 'import "@pulumi/pulumi";\n', /policy SDK, the model/],
  ["policy/policies/coredns-config.ts", 'import "../../infra/mock-runtime";\n', /never import/],
  ["policy/policies/coredns-config.ts", 'import "../../components/cluster-dns";\n', /index/],
  ["infra/render.ts", 'import "../components/rancher-cluster";\n', /index declares/],
  [
    "policy/policies/coredns-config.ts",
    'import { PolicyPack } from "@pulumi/policy";\nexport const pack = PolicyPack;\n',
    /do not construct the PolicyPack/,
  ],
];

const allowed: [string, string][] = [
  ["components/cluster-dns/index.ts", 'import "@pulumi/pulumi";\n'],
  ["components/rancher-cluster/rke-config.ts", 'import "../rke2-cluster/config";\n'],
  [
    "components/rancher-cluster/rke-config.ts",
    'import type { NodeStartInputs } from "../rke2-cluster/provider";\nexport type X = NodeStartInputs;\n',
  ],
  ["components/cluster-dns/chart.ts", 'import "../model/index";\n'],
  ["policy/policies/coredns-config.ts", 'import "@pulumi/policy";\n'],
  [
    "policy/index.ts",
    'import { PolicyPack } from "@pulumi/policy";\nexport const pack = PolicyPack;\n',
  ],
  ["policy/policies/coredns-config.ts", 'import "../../components/cluster-dns/chart";\n'],
  ["infra/program.ts", 'import "../components/rke2-cluster";\n'],
];

describe("layers", function () {
  this.timeout(60000);

  for (const [file, source, why] of refused) {
    it(`lint refuses \`${source.split("\n")[0]}\` in ${file}`, async () => {
      const messages = await restrictedImports(file, source);
      assert.ok(
        messages.some((m) => why.test(m)),
        `expected a no-restricted-imports error matching ${why}, got: ${JSON.stringify(messages)}`,
      );
    });
  }

  for (const [file, source] of allowed) {
    it(`lint allows \`${source.split("\n")[0]}\` in ${file}`, async () => {
      assert.deepEqual(await restrictedImports(file, source), []);
    });
  }

  it("the policy pack declares every package its code reaches", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "policy", "package.json"), "utf8"));
    const declared = Object.keys(manifest.dependencies ?? {});
    const missing = [...packagesReachedFrom("policy/index.ts")].filter(
      (p) => !declared.includes(p),
    );
    assert.deepEqual(missing, [], `policy/package.json lacks ${missing.join(", ")}`);
  });

  it("renders offline without loading the Pulumi SDK", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-render-"));
    try {
      const probe = [
        `process.argv = [process.argv[0], "render", "--stack", "lab", "--out", ${JSON.stringify(out)}];`,
        'require("./bin/infra/cli/render.js");',
        "const loaded = Object.keys(require.cache).filter((k) => /node_modules[\\\\/]@pulumi[\\\\/]/.test(k));",
        "process.stdout.write(JSON.stringify(loaded));",
      ].join("\n");
      const stdout = execFileSync(process.execPath, ["-e", probe], { cwd: ROOT }).toString();
      const loaded = JSON.parse(stdout.slice(stdout.lastIndexOf("[")));
      assert.ok(fs.existsSync(path.join(out, "index.json")), "render wrote no index.json");
      assert.deepEqual(loaded, [], `render loaded the SDK: ${loaded.slice(0, 3).join(", ")}`);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
});
