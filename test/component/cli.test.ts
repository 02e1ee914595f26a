/** The offline commands as a user runs them: `npm run verify` and `npm run render`. */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { stackFilePath } from "../../infra/config/stack-file";

const BIN = path.resolve(__dirname, "..", "..", "infra", "cli");
const NS = "rke2-remediation";

function node(script: string, args: string[]) {
  const r = spawnSync(process.execPath, [path.join(BIN, script), ...args], {
    encoding: "utf8",
    timeout: 120000,
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A copy of the lab stack with changes applied to its config, in a temp file. */
function labCopy(change: (config: Record<string, unknown>) => void): string {
  const doc = YAML.parse(fs.readFileSync(stackFilePath("lab"), "utf8"));
  change(doc.config);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-stack-")), "Pulumi.lab.yaml");
  fs.writeFileSync(file, YAML.stringify(doc));
  return file;
}

describe("offline commands", function () {
  this.timeout(120000);

  it("verify passes the lab stack", () => {
    const r = node("verify.js", ["--stack", "lab"]);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /0 config problem\(s\)/);
  });

  it("verify names every bad key of a stack at once and exits 1", () => {
    const file = labCopy((c) => {
      (c[`${NS}:nodes`] as { ip: string }[])[1].ip = "192.168.122.300";
      (c[`${NS}:rke2`] as Record<string, unknown>).version = "1.35.6";
      (c[`${NS}:dns`] as Record<string, unknown>).upstreamResolvers = ["10.13.0.10"];
    });
    const r = node("verify.js", ["--stack", "lab", "--file", file, "--json"]);
    assert.equal(r.status, 1);
    const report = JSON.parse(r.out) as { configProblems: { key: string }[] };
    assert.deepEqual(report.configProblems.map((p) => p.key).sort(), [
      `${NS}:dns.upstreamResolvers[0]`,
      `${NS}:nodes[1].ip`,
      `${NS}:rke2.version`,
    ]);
  });

  it("verify fails a stack whose Rancher records miss a server, naming the policy", () => {
    const file = labCopy((c) => {
      (c[`${NS}:libvirt`] as { dnsRecords: Record<string, string[]> }).dnsRecords["ai-ear.cn"] = [
        "192.168.122.20",
        "192.168.122.21",
      ];
    });
    const r = node("verify.js", ["--stack", "lab", "--file", file]);
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /mandatory\s+rancher-records-cover-management-servers/);
  });

  it("verify fails a stack that joins servers in parallel, naming the policy", () => {
    const file = labCopy((c) => {
      (c[`${NS}:rke2`] as Record<string, unknown>).serverJoin = "parallel";
    });
    const r = node("verify.js", ["--stack", "lab", "--file", file]);
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /mandatory\s+rke2-servers-join-one-at-a-time/);
  });

  it("render writes every artifact and an index of them", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-render-"));
    const r = node("render.js", ["--stack", "lab", "--out", out]);
    assert.equal(r.status, 0, r.out);
    const index = JSON.parse(fs.readFileSync(path.join(out, "index.json"), "utf8")) as {
      kind: string;
      path: string;
    }[];
    for (const entry of index)
      assert.ok(fs.existsSync(path.join(out, entry.path)), `${entry.path} missing`);
    const kinds = new Set(index.map((e) => e.kind));
    for (const kind of [
      "libvirt-dns-host-xml",
      "rke2-server-config",
      "coredns-corefile",
      "nodelocal-corefile",
      "networkpolicy",
      "node-preparation-script",
    ]) {
      assert.ok(kinds.has(kind), `no ${kind} artifact`);
    }
  });
});
