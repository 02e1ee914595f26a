/** The offline commands as a user runs them: `npm run verify` and `npm run render`. */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import { createHash } from "crypto";
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

/**
 * A copy of the seeds' whole estate in one stack (the lab stack plus the uat1 stack's nodes and
 * cluster), with changes applied, in a temp file.
 */
function estateCopy(change: (config: Record<string, unknown>) => void): string {
  const uat1 = YAML.parse(fs.readFileSync(stackFilePath("uat1"), "utf8")).config;
  return labCopy((c) => {
    (c[`${NS}:nodes`] as unknown[]).push(...(uat1[`${NS}:nodes`] as unknown[]));
    (c[`${NS}:rancher`] as Record<string, unknown>).downstreamClusters =
      uat1[`${NS}:rancher`].downstreamClusters;
    change(c);
  });
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

  it("render writes the pass-through settings into each node's config.yaml and the downstream machineGlobalConfig", () => {
    const file = estateCopy((c) => {
      const rke2 = c[`${NS}:rke2`] as Record<string, unknown>;
      rke2.extraConfig = { selinux: true, "kube-apiserver-arg": ["audit-log-maxage=30"] };
      rke2.serverConfig = {
        "node-taint": ["CriticalAddonsOnly=true:NoExecute"],
        "write-kubeconfig-mode": "0640",
      };
      const nodes = c[`${NS}:nodes`] as Record<string, unknown>[];
      nodes[2].extraConfig = { "node-label": ["zone=b"], "kubelet-arg": ["max-pods=250"] };
      const rancher = c[`${NS}:rancher`] as { downstreamClusters: Record<string, unknown>[] };
      rancher.downstreamClusters[0].extraConfig = { "etcd-expose-metrics": true };
    });
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-render-"));
    const r = node("render.js", ["--stack", "lab", "--file", file, "--out", out]);
    assert.equal(r.status, 0, r.out);
    const index = JSON.parse(fs.readFileSync(path.join(out, "index.json"), "utf8")) as {
      kind: string;
      path: string;
      target?: string;
    }[];
    const read = (kind: string, target?: string) => {
      const entry = index.find(
        (e) => e.kind === kind && (target === undefined || e.target === target),
      );
      assert.ok(entry, `${kind} ${target ?? ""} not rendered`);
      return YAML.parse(fs.readFileSync(path.join(out, entry.path), "utf8")) as Record<
        string,
        unknown
      >;
    };
    for (const server of ["sza122020.local", "sza122021.local", "sza122022.local"]) {
      const config = read("rke2-server-config", server);
      assert.equal(config.selinux, true, server);
      assert.deepEqual(config["kube-apiserver-arg"], ["audit-log-maxage=30"], server);
      assert.deepEqual(config["node-taint"], ["CriticalAddonsOnly=true:NoExecute"], server);
      assert.equal(config["write-kubeconfig-mode"], "0640", server);
      assert.equal(config["node-ip"] !== undefined && config.token !== undefined, true, server);
    }
    const third = read("rke2-server-config", "sza122022.local");
    assert.deepEqual(third["node-label"], ["zone=b"]);
    // The lab runs NodeLocalDNS in IPVS mode: kubelet keeps the product's cluster-dns entry.
    assert.deepEqual(third["kubelet-arg"], ["cluster-dns=169.254.20.10", "max-pods=250"]);
    assert.equal(read("rke2-server-config", "sza122020.local")["node-label"], undefined);
    const global = read("rancher-machine-global-config");
    assert.equal(global["etcd-expose-metrics"], true);
    assert.equal(global.selinux, undefined, "the management cluster's settings stay there");
  });

  it("verify refuses a pass-through setting the product manages, naming the key that sets it", () => {
    const file = labCopy((c) => {
      (c[`${NS}:rke2`] as Record<string, unknown>).extraConfig = { cni: "canal" };
      (c[`${NS}:nodes`] as Record<string, unknown>[])[0].extraConfig = {
        "kube-proxy-arg": ["proxy-mode=iptables"],
      };
    });
    const r = node("verify.js", ["--stack", "lab", "--file", file]);
    assert.equal(r.status, 1, r.out);
    assert.match(
      r.out,
      /rke2\.extraConfig\.cni.* is a setting the product manages; set it through rke2\.cni instead/,
    );
    assert.match(
      r.out,
      /nodes\[0\]\.extraConfig\.kube-proxy-arg.* sets proxy-mode, which the product renders from rke2\.kubeProxyMode/,
    );
  });

  it("refuses an unknown flag, naming the closest one, and prints the usage on --help", () => {
    const typo = node("verify.js", ["--stack", "lab", "--fiel", "x.yaml"]);
    assert.equal(typo.status, 1, typo.out);
    assert.match(typo.out, /unknown flag --fiel; did you mean --file\?/);
    const help = node("render.js", ["--help"]);
    assert.equal(help.status, 0, help.out);
    assert.match(help.out, /^usage: npm run render -- --stack <name>/m);
    assert.match(help.out, /--out <value> +directory the artifacts/);
    const missing = node("render.js", ["--stack", "lab", "--out"]);
    assert.equal(missing.status, 1);
    assert.match(missing.out, /--out <value>' argument missing/);
  });

  it("verify takes the enforcement levels of a policy pack config, as pulumi preview does", () => {
    const file = estateCopy((c) => {
      const rancher = c[`${NS}:rancher`] as { downstreamClusters: Record<string, unknown>[] };
      rancher.downstreamClusters[0].insecureRegistration = true;
    });
    const strict = node("verify.js", ["--stack", "lab", "--file", file]);
    assert.equal(strict.status, 1, strict.out);
    assert.match(strict.out, /mandatory\s+rancher-registration-verifies-ca/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-policy-config-"));
    const config = path.join(dir, "policy-config.json");
    for (const levels of [
      { "rancher-registration-verifies-ca": "advisory" },
      { "rancher-registration-verifies-ca": { enforcementLevel: "advisory" } },
    ]) {
      fs.writeFileSync(config, JSON.stringify(levels));
      const r = node("verify.js", [
        "--stack",
        "lab",
        "--file",
        file,
        "--policy-pack-config",
        config,
      ]);
      assert.equal(r.status, 0, r.out);
      assert.match(r.out, /advisory\s+rancher-registration-verifies-ca/);
    }
    fs.writeFileSync(config, JSON.stringify({ "rancher-registration-verify-ca": "advisory" }));
    const wrong = node("verify.js", ["--stack", "lab", "--policy-pack-config", config]);
    assert.equal(wrong.status, 1);
    assert.match(
      wrong.out,
      /"rancher-registration-verify-ca" is not a policy of this pack; did you mean "rancher-registration-verifies-ca"\?/,
    );
  });

  it("a downstream stack takes the management stack's outputs: render lab, then verify and render uat1 with them", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-split-"));
    const lab = node("render.js", ["--stack", "lab", "--out", path.join(dir, "lab")]);
    assert.equal(lab.status, 0, lab.out);
    const outputs = path.join(dir, "lab", "stack", "management-outputs.json");
    const offline = node("verify.js", ["--stack", "uat1"]);
    assert.equal(offline.status, 1, offline.out);
    assert.match(
      offline.out,
      /rke2-remediation:managementStack: names the stack "organization\/rke2-remediation\/lab"/,
    );
    // Only that: the URL and CA it would read from there, and the clusters this stack declares
    // itself, are no problems of their own.
    assert.match(offline.out, /stack "uat1": 1 config problem\(s\)/);
    const verify = node("verify.js", ["--stack", "uat1", "--management-outputs", outputs]);
    assert.equal(verify.status, 0, verify.out);
    // The warning it prints is the one it counts, and --json carries it.
    assert.match(
      verify.out,
      /warning {2}rke2-remediation:dns\.upstreamResolvers: only one upstream resolver \(192\.168\.122\.1\)/,
    );
    assert.doesNotMatch(verify.out, /\[runtime\]/);
    assert.match(
      verify.out,
      /stack "uat1": 0 config problem\(s\), 1 warning\(s\), 0 violation\(s\)/,
    );
    const json = node("verify.js", ["--stack", "uat1", "--management-outputs", outputs, "--json"]);
    assert.deepEqual(
      (JSON.parse(json.out) as { configWarnings: { key: string }[] }).configWarnings.map(
        (w) => w.key,
      ),
      ["rke2-remediation:dns.upstreamResolvers"],
    );
    const out = path.join(dir, "uat1");
    const render = node("render.js", [
      "--stack",
      "uat1",
      "--management-outputs",
      outputs,
      "--out",
      out,
    ]);
    assert.equal(render.status, 0, render.out);
    // The CA is the lab stack's: Rancher's checksum of it (SHA-256 of the PEM with its final
    // newline, rancher/rancher@v2.14.3 pkg/systemtemplate/import.go CAChecksum).
    const plan = JSON.parse(
      fs.readFileSync(path.join(out, "rancher", "uat1", "registration-plan.json"), "utf8"),
    ) as { caChecksum: string };
    const ca = YAML.parse(fs.readFileSync(stackFilePath("lab"), "utf8")).config[`${NS}:rancher`]
      .caCertificate as string;
    assert.ok(ca.endsWith("\n"));
    assert.equal(plan.caChecksum, createHash("sha256").update(ca).digest("hex"));
    // The lab stack, which declares no downstream cluster now, and uat1 declaring it twice.
    const doc = JSON.parse(fs.readFileSync(outputs, "utf8"));
    doc.rancher.downstreamClusters = ["uat1"];
    fs.writeFileSync(outputs, JSON.stringify(doc));
    const twice = node("verify.js", ["--stack", "uat1", "--management-outputs", outputs]);
    assert.equal(twice.status, 1, twice.out);
    assert.match(
      twice.out,
      /downstreamClusters\[0\]\.name: cluster "uat1" is declared by the management stack/,
    );
    fs.rmSync(dir, { recursive: true, force: true });
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
