/**
 * doctor against the lab with four incidents present at once:
 * - seed 003 as its operators left it (`lab estate broken`);
 * - seed 000: the search domain with the cluster DNS on the chart's default Corefile
 *   (`lab dns default`), and a cluster agent pod started under it (`lab restart-cluster-agent`),
 *   which logs Rancher's name timing out;
 * - seed 001: a DNS policy that allows TCP only, in a namespace whose egress is denied, on the
 *   first server's real kube-apiserver;
 * - seed 004: a silent upstream (192.168.122.99, an address of the lab's network that no
 *   namespace holds, in the stack's dns.upstreamResolvers), and a node-local cache on .30 that the
 *   real CoreDNS's loop plugin stopped (`lab nodelocal-loop 30`);
 * - drift on the KVM host: the libvirt record of Rancher's name at .21 deleted by hand.
 * doctor runs as an operator runs it, from the stack file alone: no Pulumi stack, no state. What
 * each cause is expected on comes from the lab's own view (iptables-save in the node's namespace,
 * the systemctl double's unit files, etcdctl against the first server, the agent's log file),
 * never from the product's code. The converged estate's case is in local-stack.test.ts, after
 * its up.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import {
  etcdMembers,
  handDeleteDnsHost,
  hostKeyIn,
  lab,
  LAB_DIR,
  LAB_PREFIX,
  LAB_STACK,
  nodeFile,
  REPO,
  ruleset,
  run,
  unitState,
  virsh,
} from "../real/lab";
import type { DoctorReport } from "../../infra/doctor/diagnose";

const STACK = `doctor-${LAB_PREFIX}`;
const FILE = path.join(REPO, "stacks", `Pulumi.${STACK}.yaml`);
const NODES = [20, 21, 22, 31, 30];
const SILENT_UPSTREAM = "192.168.122.99";
const KUBECONFIG = path.join(LAB_DIR, "kube", "kubeconfig");
const kubectl = (...args: string[]) =>
  run("kubectl", ["--kubeconfig", KUBECONFIG, "--request-timeout=10s", ...args]);
/** Seed 001: DNS allowed on TCP only, beside the namespace's own default-deny egress policy. */
const TCP_ONLY_DNS = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-dns-tcp
  namespace: default
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress:
  - ports:
    - port: 53
      protocol: TCP
    to:
    - ipBlock:
        cidr: 169.254.20.10/32
`;
const name = (octet: number) => `sza122${String(octet).padStart(3, "0")}.local`;

function doctor(...args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(
    "node",
    [path.join(REPO, "bin", "infra", "cli", "doctor.js"), "--stack", STACK, ...args],
    { encoding: "utf8", timeout: 120000 },
  );
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The lab stack's file, with `edit` applied to its config; no Pulumi stack is made. */
function writeStack(edit: (config: Record<string, unknown>) => void): void {
  const doc = YAML.parse(
    fs.readFileSync(path.join(REPO, "stacks", `Pulumi.${LAB_STACK}.yaml`), "utf8"),
  );
  edit(doc.config);
  fs.writeFileSync(FILE, YAML.stringify(doc));
}

/** etcd's member names, as etcdctl on the first server lists them. */
const memberNames = () => etcdMembers().map((m) => m.name ?? "");

const UNITS = [
  "iptables.service",
  "ip6tables.service",
  "firewalld.service",
  "nm-cloud-setup.service",
  "nm-cloud-setup.timer",
  "rke2-server.service",
  "rke2-agent.service",
];

/** What doctor must not change on any node: files, unit states and their history, rules, etcd. */
function snapshot(): unknown {
  return {
    nodes: NODES.map((octet) => ({
      octet,
      files: ["/etc", "/var/lib/rke2-remediation"].flatMap((dir) => treeOf(nodeFile(octet, dir))),
      units: UNITS.map((u) => unitState(octet, u)),
      rules: [...ruleset(octet), ...ruleset(octet, "ip6tables")],
    })),
    members: memberNames().sort(),
    network: virsh("net-dumpxml", "default").stdout,
    policies: kubectl(
      "get",
      "networkpolicies",
      "-A",
      "-o",
      "jsonpath={.items[*].metadata.resourceVersion}",
    ).stdout,
  };
}

/** Every entry under `root`: a file's size, mode and mtime, a link's target (dangling or not). */
function treeOf(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const st = fs.lstatSync(full);
      if (st.isSymbolicLink()) found.push(`${full} -> ${fs.readlinkSync(full)}`);
      else if (st.isDirectory()) walk(full);
      else found.push(`${full} ${st.size} ${st.mode} ${st.mtimeMs}`);
    }
  };
  walk(root);
  return found.sort();
}

/** The downstream nodes whose cluster agent pod's log has Rancher's name timing out. */
function agentTimedOut(): number[] {
  return [31, 30].filter((octet) => {
    const pods = nodeFile(octet, "/var/log/pods");
    if (!fs.existsSync(pods)) return false;
    return fs
      .readdirSync(pods)
      .filter((d) => d.startsWith("cattle-system_cattle-cluster-agent-"))
      .some((d) =>
        /lookup ai-ear\.cn: i\/o timeout/.test(
          fs.readFileSync(path.join(pods, d, "cluster-register", "0.log"), "utf8"),
        ),
      );
  });
}

const hasFirewall = (octet: number) =>
  [...ruleset(octet), ...ruleset(octet, "ip6tables")].some((l) => / -j REJECT /.test(l)) ||
  unitState(octet, "iptables.service").enabled ||
  unitState(octet, "ip6tables.service").enabled;

describe("doctor names each incident's cause on the live estate, read-only", function () {
  this.timeout(600000);
  let report: DoctorReport;
  let beforeRun: unknown;
  let afterRun: unknown;
  let status: number;
  /** The libvirt record the test deletes, put back afterwards. */
  let removedRecord = "";

  before(() => {
    for (const args of [
      ["estate", "broken"],
      ["dns", "default"],
      ["restart-cluster-agent"],
      ["nodelocal-loop", "30"],
    ]) {
      const r = lab(...args);
      assert.equal(r.status, 0, `lab ${args.join(" ")}: ${r.stderr}`);
    }
    for (let i = 0; agentTimedOut().length === 0; i++) {
      assert.ok(i < 90, "the new cluster agent pod logged no lookup timeout in 90 s");
      spawnSync("sleep", ["1"]);
    }
    for (let i = 0; kubectl("get", "--raw", "/readyz").stdout !== "ok"; i++) {
      assert.ok(i < 60, "the first server's kube-apiserver did not answer within 60 s");
      spawnSync("sleep", ["1"]);
    }
    const policies = path.join(LAB_DIR, "doctor-policies.yaml");
    fs.writeFileSync(
      policies,
      `${fs.readFileSync(path.join(REPO, "test", "fixtures", "default-deny-egress.yaml"), "utf8")}---\n${TCP_ONLY_DNS}`,
    );
    const applied = kubectl("apply", "-n", "default", "-f", policies);
    assert.equal(applied.status, 0, applied.stderr);
    const dumped = virsh("net-dumpxml", "default");
    assert.equal(dumped.status, 0, dumped.stderr);
    removedRecord = /<host ip='192\.168\.122\.21'>[\s\S]*?<\/host>/.exec(dumped.stdout)?.[0] ?? "";
    assert.match(removedRecord, /ai-ear\.cn/);
    handDeleteDnsHost("192.168.122.21");
    writeStack((config) => {
      const dns = config["rke2-remediation:dns"] as { upstreamResolvers: string[] };
      dns.upstreamResolvers = [...dns.upstreamResolvers, SILENT_UPSTREAM];
    });
    beforeRun = snapshot();
    const r = doctor("--json");
    afterRun = snapshot();
    status = r.status;
    assert.ok(r.stdout.startsWith("{"), `doctor printed no report:\n${r.stdout}\n${r.stderr}`);
    report = JSON.parse(r.stdout) as DoctorReport;
    console.log(`      doctor read ${report.hosts} hosts in ${report.wallMs} ms`);
  });

  after(() => {
    fs.rmSync(FILE, { force: true });
    // The looping cache's pod is gone: kubelet removes its log directory.
    const pods = nodeFile(30, "/var/log/pods");
    for (const dir of fs.existsSync(pods) ? fs.readdirSync(pods) : [])
      if (dir.startsWith("kube-system_node-local-dns-lab_"))
        fs.rmSync(path.join(pods, dir), { recursive: true, force: true });
    if (removedRecord)
      virsh("net-update", "default", "add-last", "dns-host", removedRecord, "--live", "--config");
    kubectl("delete", "-n", "default", "networkpolicy", "default-deny-egress", "allow-dns-tcp");
    lab("dns", "stack");
  });

  const causesOn = (octet: number, cause: string) =>
    report.findings.filter((f) => f.host === name(octet) && f.cause === cause);

  it("changes nothing: every node's files, units, rules, and etcd's members are as before", () => {
    assert.deepEqual(afterRun, beforeRun);
  });

  it("exits 1 and reaches every host", () => {
    assert.equal(status, 1);
    assert.equal(report.hosts, NODES.length + 1, "the nodes and the KVM host");
    assert.deepEqual(
      report.findings.filter((f) => f.cause === "unreachable"),
      [],
    );
  });

  it("seed 003's firewall on exactly the nodes whose rules or units hold it, and the blocked etcd ports", () => {
    for (const octet of NODES) {
      const own = causesOn(octet, "seed 003: firewall").filter((f) =>
        f.summary.startsWith("Rocky's default firewall"),
      );
      assert.equal(own.length, hasFirewall(octet) ? 1 : 0, `.${octet}: ${JSON.stringify(own)}`);
    }
    for (const octet of [21, 22]) assert.ok(hasFirewall(octet), `.${octet} has no firewall`);
    const ports = causesOn(20, "seed 003: firewall").find((f) => /etcd's ports/.test(f.summary));
    assert.ok(ports, "the first server's blocked etcd ports are not named");
    assert.match(ports.summary, /sza122021\.local/);
    assert.match(ports.summary, /sza122022\.local/);
    assert.match(ports.evidence, /TCP to 192\.168\.122\.2[12]: .*\b2380 /);
  });

  it("seed 003's learner: the server etcd left out is named, stuck behind the one that joined", () => {
    const members = memberNames();
    const out = [21, 22].filter((o) => !members.some((m) => m.startsWith(`${name(o)}-`)));
    assert.equal(out.length, 1, `members: ${members.join(", ")}`);
    const joined = out[0] === 21 ? 22 : 21;
    const stuck = causesOn(out[0], "seed 003: etcd learner");
    assert.equal(stuck.length, 1, JSON.stringify(report.findings));
    assert.match(
      stuck[0].summary,
      new RegExp(`stuck behind ${name(joined).replace(/\./g, "\\.")}`),
    );
    assert.match(stuck[0].evidence, /etcdctl member list, read on sza122020\.local/);
    assert.match(
      stuck[0].evidence,
      /rke2-server's log: [1-9]\d* join retr(y|ies) on "too many learner members in cluster"/,
    );
    assert.deepEqual(causesOn(20, "seed 003: etcd learner"), []);
  });

  it("seed 000 on the downstream nodes, whose cluster DNS runs the chart's default Corefile", () => {
    for (const octet of [31, 30]) {
      const found = causesOn(octet, "seed 000: search domain");
      assert.equal(found.length, 1, `.${octet}: ${JSON.stringify(report.findings)}`);
      assert.match(found[0].evidence, /dig ai-ear\.cn\.local: no answer from 192\.168\.122\.1/);
      assert.match(found[0].remedy, /dns\.neutralizedSearchDomains/);
    }
    assert.equal(report.findings.filter((f) => f.cause === "seed 000: search domain").length, 2);
  });

  it("seed 000 in the cluster agent's words, on the node its pod logs on", () => {
    const found = report.findings.filter((f) => f.cause === "seed 000: cluster agent");
    assert.deepEqual(
      found.map((f) => f.host),
      agentTimedOut().map(name),
    );
    assert.match(found[0].evidence, /lookup ai-ear\.cn: i\/o timeout/);
  });

  it("seed 001: the TCP-only DNS policy, named on the server whose kubectl read it", () => {
    const found = report.findings.filter((f) => f.cause === "seed 001: DNS egress policy");
    assert.deepEqual(
      found.map((f) => f.host),
      ["sza122020.local"],
    );
    assert.match(
      found[0].summary,
      /^in namespace default of cluster management, new pods without labels may ask DNS over TCP only/,
    );
    assert.match(found[0].evidence, /allow-dns-tcp, default-deny-egress/);
  });

  it("drift on the KVM host: the libvirt record deleted by hand, and only that one", () => {
    const drift = report.findings.filter((f) => f.host === "libvirt on 192.168.122.1");
    assert.deepEqual(
      drift.map((f) => [f.cause, f.summary]),
      [["drift", "the libvirt network default does not answer ai-ear.cn with 192.168.122.21"]],
    );
    assert.match(drift[0].remedy, /libvirt\.dnsRecords/);
  });

  it("seed 004's loop on the node whose node-local cache stopped on it, in CoreDNS's own words", () => {
    const found = report.findings.filter((f) => f.cause === "seed 004: forwarding loop");
    assert.deepEqual(
      found.map((f) => f.host),
      ["sza122030.local"],
    );
    assert.match(
      found[0].evidence,
      /\[FATAL\] plugin\/loop: Loop \(127\.0\.0\.\d+:\d+ -> 127\.0\.0\.77:53\) detected/,
    );
  });

  it("seed 004: the silent upstream named, the answering one not", () => {
    const found = report.findings.filter((f) => f.cause === "seed 004: upstream resolver");
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.match(found[0].summary, /192\.168\.122\.99 does not answer/);
    assert.match(found[0].remedy, /dns\.upstreamResolvers/);
  });

  it("prints no secret: neither the SSH key nor the token the hosts' config.yaml holds", () => {
    const text = JSON.stringify(report);
    assert.doesNotMatch(text, /PRIVATE KEY|K10[0-9a-f]{20}/);
  });

  it("prints a table for people with each cause's host, evidence and remedy, and its progress", () => {
    const r = doctor();
    assert.equal(r.status, 1);
    assert.match(r.stdout, /^sza12202[12]\.local +seed 003: etcd learner: /m);
    assert.match(r.stdout, /^ +evidence: /m);
    assert.match(r.stdout, /^ +remedy: /m);
    assert.match(r.stdout, /cause\(s\) on 6 host\(s\)$/m);
    assert.match(r.stderr, /^doctor: 6\/6 hosts read$/m);
  });

  it("a host whose key differs from the pinned one is refused and named; the others are still read", () => {
    writeStack((config) => {
      const nodes = config["rke2-remediation:nodes"] as { ip: string; ssh: { hostKey: string } }[];
      nodes.find((n) => n.ip === "192.168.122.30")!.ssh.hostKey = hostKeyIn(
        path.join(LAB_DIR, "nodes", "n31", "ssh"),
      );
    });
    const r = doctor("--json");
    const refused = JSON.parse(r.stdout) as DoctorReport;
    const unreachable = refused.findings.filter((f) => f.cause === "unreachable");
    assert.deepEqual(
      unreachable.map((f) => f.host),
      ["sza122030.local"],
    );
    assert.match(unreachable[0].evidence, /host key/i);
    assert.ok(refused.findings.some((f) => f.host === "sza122031.local"));
  });
});
