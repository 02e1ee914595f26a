/** Release hygiene: the licence the packages declare is in the repository, and each version has its changelog entry. */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";

const REPO = path.join(__dirname, "..", "..", "..");
const read = (file: string) => fs.readFileSync(path.join(REPO, file), "utf8");
const manifest = (file: string) =>
  JSON.parse(read(file)) as { name: string; version: string; license?: string };

describe("release: licence, versions and changelog", () => {
  it("LICENSE holds the Apache License 2.0, which both packages declare", () => {
    assert.match(read("LICENSE"), /^\s*Apache License\s+Version 2\.0, January 2004/);
    for (const file of ["package.json", "policy/package.json"]) {
      assert.equal(manifest(file).license, "Apache-2.0", file);
    }
  });

  it("CHANGELOG.md has an entry for the project's and for the policy pack's version", () => {
    const changelog = read("CHANGELOG.md");
    const section = (name: string) => {
      const start = changelog.indexOf(`\n## ${name}`);
      assert.ok(start >= 0, `CHANGELOG.md has no section ## ${name}`);
      const next = changelog.indexOf("\n## ", start + 1);
      return changelog.slice(start, next < 0 ? undefined : next);
    };
    for (const file of ["package.json", "policy/package.json"]) {
      const { name, version } = manifest(file);
      assert.ok(
        section(name).includes(`\n### ${version}\n`),
        `CHANGELOG.md's section ${name} has no entry ### ${version}`,
      );
    }
  });

  it("the lock files carry the versions the manifests give", () => {
    for (const dir of ["", "policy/"]) {
      const lock = JSON.parse(read(`${dir}package-lock.json`)) as {
        version: string;
        packages: Record<string, { version?: string }>;
      };
      const { version } = manifest(`${dir}package.json`);
      assert.equal(lock.version, version, `${dir}package-lock.json`);
      assert.equal(lock.packages[""].version, version, `${dir}package-lock.json`);
    }
  });
});
