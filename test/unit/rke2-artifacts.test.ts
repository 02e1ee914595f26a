import * as assert from "assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import {
  mirrorCacheDirOf,
  parseChecksums,
  releaseArtifacts,
  releaseFileUrl,
} from "../../components/rke2-cluster/artifacts";
import { parseNodeFacts } from "../../components/rke2-cluster/start-plan";
import { validateEnvironment } from "../../infra/config/validate";
import { estateWith, problemsOf, setAt, stackKey } from "./fixtures";

const KEY = "rke2.artifacts.path";

/** A release directory with the named files (random contents) and a checksum file by sha256sum. */
function releaseDir(files: readonly string[], listed: readonly string[] = files): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2-artifacts-unit-"));
  for (const name of files) fs.writeFileSync(path.join(dir, name), `${name} ${Math.random()}\n`);
  fs.writeFileSync(path.join(dir, "install.sh"), "#!/bin/sh\n");
  const sums = listed.length
    ? execFileSync("sha256sum", [...listed], { cwd: dir, encoding: "utf8" })
    : "";
  fs.writeFileSync(path.join(dir, "sha256sum-amd64.txt"), sums);
  return dir;
}

describe("release artifacts (rke2.artifacts)", () => {
  const dirs: string[] = [];
  const made = (files: readonly string[], listed?: readonly string[]) => {
    const dir = releaseDir(files, listed);
    dirs.push(dir);
    return dir;
  };
  after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it("reads a checksum file as sha256sum writes it, text or binary mode, and skips other lines", () => {
    const a = "a".repeat(64);
    const b = "b".repeat(64);
    const sums = parseChecksums(
      `${a}  rke2.linux-amd64.tar.gz\n${b} *rke2-images.linux-amd64.tar.zst\n# note\nxyz  other\n`,
    );
    assert.deepEqual(
      [...sums],
      [
        ["rke2.linux-amd64.tar.gz", a],
        ["rke2-images.linux-amd64.tar.zst", b],
      ],
    );
  });

  it("lists the tarball, the zst images archive over the gz one, the further image archives, then the checksum file and install.sh", async () => {
    const dir = made([
      "rke2.linux-amd64.tar.gz",
      "rke2-images.linux-amd64.tar.zst",
      "rke2-images.linux-amd64.tar.gz",
      "rke2-images-canal.linux-amd64.tar.zst",
      "rke2.linux-arm64.tar.gz",
    ]);
    const files = await releaseArtifacts(dir, KEY);
    assert.deepEqual(
      files.map((f) => f.name),
      [
        "rke2.linux-amd64.tar.gz",
        "rke2-images.linux-amd64.tar.zst",
        "rke2-images-canal.linux-amd64.tar.zst",
        "sha256sum-amd64.txt",
        "install.sh",
      ],
    );
    const listed = execFileSync("sha256sum", ["rke2.linux-amd64.tar.gz", "install.sh"], {
      cwd: dir,
      encoding: "utf8",
    });
    const expected = new Map(
      listed
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/).reverse() as [string, string]),
    );
    for (const file of files.filter((f) => expected.has(f.name)))
      assert.equal(file.sha256, expected.get(file.name));
  });

  it("refuses a file whose SHA-256 is not the checksum file's, naming the key and the file", async () => {
    const dir = made(["rke2.linux-amd64.tar.gz", "rke2-images.linux-amd64.tar.zst"]);
    fs.appendFileSync(path.join(dir, "rke2-images.linux-amd64.tar.zst"), "x");
    await assert.rejects(
      releaseArtifacts(dir, KEY),
      new RegExp(
        `^Error: ${KEY}: rke2-images\\.linux-amd64\\.tar\\.zst in ${dir} has SHA-256 [0-9a-f]{64}, not [0-9a-f]{64} as sha256sum-amd64\\.txt says; nothing was changed on any host`,
      ),
    );
  });

  it("refuses an archive the checksum file does not name, where install.sh would skip it without a word", async () => {
    const dir = made(
      ["rke2.linux-amd64.tar.gz", "rke2-images.linux-amd64.tar.zst"],
      ["rke2.linux-amd64.tar.gz"],
    );
    await assert.rejects(
      releaseArtifacts(dir, KEY),
      /sha256sum-amd64\.txt in .* has no line for rke2-images\.linux-amd64\.tar\.zst, so it cannot be verified/,
    );
  });

  it("refuses a directory without the tarball, the checksum file or install.sh, naming what is missing", async () => {
    await assert.rejects(releaseArtifacts(made([], []), KEY), /has no rke2\.linux-amd64\.tar\.gz/);
    const noScript = made(["rke2.linux-amd64.tar.gz"]);
    fs.rmSync(path.join(noScript, "install.sh"));
    await assert.rejects(
      releaseArtifacts(noScript, KEY),
      /has no install\.sh; .*install script \(get\.rke2\.io\)/,
    );
    await assert.rejects(
      releaseArtifacts("/nonexistent/rke2", KEY),
      new RegExp(`^Error: ${KEY}: /nonexistent/rke2 is not a directory here`),
    );
  });

  it("reads the staged files a node reports", () => {
    const facts = parseNodeFacts(
      [
        "version=none",
        "unit=no",
        "active=no",
        "config_sha256=none",
        "data_dir=/var/lib/rancher/rke2",
        `staged_artifact=${"c".repeat(64)} rke2.linux-amd64.tar.gz`,
        `staged_artifact=${"d".repeat(64)} install.sh`,
        "host_name=n1",
        "restart_pending=none",
      ].join("\n"),
      "n1",
      "agent",
    );
    assert.deepEqual(facts.stagedArtifacts, {
      "rke2.linux-amd64.tar.gz": "c".repeat(64),
      "install.sh": "d".repeat(64),
    });
  });
});

describe("rke2.artifacts, the stack key", () => {
  it("is read into the management cluster's settings, without a trailing slash", () => {
    const raw = estateWith("rke2.artifacts", { path: "/srv/rke2/v1.35.7+rke2r1/" });
    const result = validateEnvironment("lab", raw, { requireSecrets: false });
    assert.deepEqual(result.problems, []);
    assert.deepEqual(result.model?.management.artifacts, { path: "/srv/rke2/v1.35.7+rke2r1" });
  });

  it("refuses a relative path, an unknown key, and installCommand beside it", () => {
    const raw = estateWith("rke2.artifacts", { path: "rke2", mirror: "https://mirror" });
    setAt(raw, "rke2.installCommand", "curl -sfL https://get.rke2.io | sh -");
    const problems = problemsOf(raw).map((p) => p.key);
    assert.deepEqual(problems.sort(), [
      stackKey("rke2.artifacts"),
      stackKey("rke2.artifacts.mirror"),
      stackKey("rke2.artifacts.path"),
    ]);
  });

  it("reads a mirror's https URL without a trailing slash, and its CA file", () => {
    const raw = estateWith("rke2.artifacts", {
      url: "https://mirror.internal/rke2/releases/",
      caFile: "/etc/pki/mirror-ca.pem",
    });
    const result = validateEnvironment("lab", raw, { requireSecrets: false });
    assert.deepEqual(result.problems, []);
    assert.deepEqual(result.model?.management.artifacts, {
      url: "https://mirror.internal/rke2/releases",
      caFile: "/etc/pki/mirror-ca.pem",
    });
  });

  it("refuses path and url together, plain http, a login in the URL, and a CA file beside a path or relative", () => {
    const keysOf = (value: object) =>
      problemsOf(estateWith("rke2.artifacts", value)).map((p) => `${p.key}: ${p.message}`);
    assert.match(
      keysOf({ path: "/srv/rke2", url: "https://mirror" }).join("\n"),
      /rke2\.artifacts.*: has both path and url/,
    );
    assert.match(
      keysOf({ url: "http://mirror/rke2" }).join("\n"),
      /rke2\.artifacts\.url.*: must be the https:\/\//,
    );
    const login = keysOf({ url: "https://ops:hunter2@mirror/rke2" }).join("\n");
    assert.match(login, /rke2\.artifacts\.url.*: holds a password in a URL, in a plain key/);
    assert.doesNotMatch(login, /hunter2/);
    assert.match(
      keysOf({ url: "https://ops@mirror/rke2" }).join("\n"),
      /rke2\.artifacts\.url.*: has a user name or password in it/,
    );
    assert.match(
      keysOf({ path: "/srv/rke2", caFile: "/etc/ca.pem" }).join("\n"),
      /rke2\.artifacts\.caFile.*: is the CA of a mirror: it goes with url/,
    );
    assert.match(
      keysOf({ url: "https://mirror", caFile: "ca.pem" }).join("\n"),
      /rke2\.artifacts\.caFile.*: must be the absolute path of a PEM file/,
    );
  });

  it("lays out a mirror's files as install.sh downloads them, and caches each mirror and release apart", () => {
    assert.equal(
      releaseFileUrl("https://mirror.internal/rke2", "v1.35.7+rke2r1", "sha256sum-amd64.txt"),
      "https://mirror.internal/rke2/v1.35.7%2Brke2r1/sha256sum-amd64.txt",
    );
    const a = mirrorCacheDirOf("https://a.internal", "v1.35.7+rke2r1");
    assert.notEqual(a, mirrorCacheDirOf("https://b.internal", "v1.35.7+rke2r1"));
    assert.notEqual(a, mirrorCacheDirOf("https://a.internal", "v1.36.3+rke2r1"));
    assert.match(a, /\/rke2-remediation\/artifacts\/[0-9a-f]{16}\/v1\.35\.7\+rke2r1$/);
  });
});
