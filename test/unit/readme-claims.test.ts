/**
 * What README.md and docs/ say about the shipped files, held to the files: the shipped stacks'
 * kinds, and the policy pack's dependencies.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/stack-file";

const REPO = path.join(__dirname, "..", "..", "..");
const read = (file: string) => fs.readFileSync(path.join(REPO, file), "utf8");
/** Markdown prose as one line: claims wrap across lines. */
const prose = (file: string) => read(file).replace(/\s+/g, " ");

describe("claims of README.md and docs/ about the shipped files", () => {
  it("lab is a management stack without downstream clusters, uat1 a downstream stack of lab", () => {
    assert.match(
      prose("README.md"),
      /`stacks\/Pulumi\.lab\.yaml` is a management stack \(Rancher's three servers, no downstream cluster\), and `stacks\/Pulumi\.uat1\.yaml` a downstream stack whose cluster `uat1` registers with the Rancher that `lab` runs \(`managementStack`\)/,
    );
    const lab = rawConfigFromStackFile(stackFilePath("lab")).values as {
      rancher?: { url?: string; downstreamClusters?: unknown[] };
      nodes: { role?: string; roles?: string[]; cluster?: string }[];
    };
    assert.ok(lab.rancher?.url, "lab runs Rancher");
    assert.deepEqual(lab.rancher?.downstreamClusters ?? [], []);
    const roles = (n: { role?: string; roles?: string[] }) => n.roles ?? [n.role];
    assert.equal(lab.nodes.filter((n) => roles(n).includes("server")).length, 3);
    assert.ok(lab.nodes.every((n) => n.cluster === undefined || n.cluster === "management"));
    const uat1 = rawConfigFromStackFile(stackFilePath("uat1")).values as {
      managementStack?: string;
      rancher?: { downstreamClusters?: { name: string }[] };
    };
    assert.match(uat1.managementStack ?? "", /\/lab$/);
    assert.deepEqual(
      (uat1.rancher?.downstreamClusters ?? []).map((c) => c.name),
      ["uat1"],
    );
  });

  it("docs/policies.md names the packed pack's dependencies, every one of them", () => {
    const deps = Object.keys(
      (JSON.parse(read("policy/package.json")) as { dependencies: Record<string, string> })
        .dependencies,
    ).sort();
    const sentence = /its dependencies are (.*?)\), and/.exec(prose("docs/policies.md"));
    assert.ok(sentence, "docs/policies.md no longer lists the pack's dependencies");
    const named = [...sentence[1].matchAll(/`([^`]+)`/g)].map((m) => m[1]).sort();
    assert.deepEqual(named, deps);
  });
});

describe("the provider plugins the README and the workflows install", () => {
  const deps = (JSON.parse(read("package.json")) as { dependencies: Record<string, string> })
    .dependencies;
  const pinned = {
    rancher2: `v${deps["@pulumi/rancher2"]}`,
    kubernetes: `v${deps["@pulumi/kubernetes"]}`,
  };

  it("the README installs the versions package.json's SDKs ask for", () => {
    for (const [name, version] of Object.entries(pinned)) {
      assert.ok(
        read("README.md").includes(`pulumi plugin install resource ${name} ${version}`),
        `README.md does not install ${name} ${version}`,
      );
    }
  });

  for (const workflow of ["policy-preview.yml", "drift.yml"]) {
    it(`${workflow} installs the same versions and caches them`, () => {
      const text = read(`.github/workflows/${workflow}`);
      const listed = /for plugin in (.*); do/.exec(text);
      assert.ok(listed, `${workflow} installs no provider plugin`);
      assert.deepEqual(
        [...listed[1].matchAll(/"(\S+) (\S+)"/g)].map((m) => [m[1], m[2]]),
        Object.entries(pinned),
      );
      assert.match(text, /uses: actions\/cache@v4\n\s+with:\n\s+path: ~\/\.pulumi\/plugins/);
    });
  }

  it("policy-preview.yml creates a stack the pull request adds before it reads it", () => {
    const text = read(".github/workflows/policy-preview.yml");
    const create = text.indexOf('pulumi stack select --create "$STACK"');
    assert.ok(create > 0, "no pulumi stack select --create");
    assert.ok(create < text.indexOf("pulumi config get"), "the stack is read before it is created");
  });
});
