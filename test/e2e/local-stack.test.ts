/**
 * The real Pulumi CLI (built from the Go module proxy) against the lab, with the local file
 * backend: `pulumi up`, drift detection through `pulumi preview --refresh --expect-no-changes`,
 * the policy pack in a preview, and destroy. Runs inside the lab's operator namespace.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as crypto from "crypto";
import { digA, pulumi, pulumiAsync } from "./cli";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import {
  addRejectRule,
  handDeleteDnsHost,
  lab,
  LAB_STACK,
  LAB_DIR,
  labNs,
  nodeFile,
  REPO,
  run,
  ruleset,
  unitLog,
  unitState,
} from "../real/lab";
import { runScript } from "../../components/ssh/run-script";
import { commandLineLeaks, sampleCommandLines, sliceOf } from "../support/secret-traces";
import { checkoutOf, runWorkflow, WorkflowRun } from "../support/workflow";
import { createClusterIpService, inNamespace, nodeConnection } from "../real/lab";

const SERVERS = ["192.168.122.20", "192.168.122.21", "192.168.122.22"];
/** A later release than the lab stack's, for the rolling upgrade. */
const UPGRADE_TO = "v1.36.3+rke2r1";
/** The seed estate's private registry (plain HTTP) and a registry password made for this run. */
const REGISTRY = "192.168.122.156:30000";
const REGISTRY_PASSWORD = `pw-${crypto.randomBytes(12).toString("hex")}`;

// RKE2 servers: changes one at a time, data kept (mocha runs a suite's own tests before its
// nested suites, so these are plain tests in the order the estate goes through).
const servers = ["20", "21", "22"];
const history = () =>
  servers.map((n) => unitState(Number(n), "rke2-server.service").history.length);
/** Position in the output of a node's line matching `what`, after `from`. */
function at(out: string, n: string, what: string, from = 0): number {
  const found = out.slice(from).search(new RegExp(`sza1220${n}\\.local: ${what}`));
  return found < 0 ? -1 : found + from;
}
/** Asserts each server restarted only after the previous one's gate passed again. */
function assertRolling(out: string) {
  let previousJoin = -1;
  for (const n of servers) {
    const restarted = at(out, n, "changed: restarted rke2-server\\.service");
    assert.ok(restarted >= 0 && restarted > previousJoin, `.${n} restarted out of order:\n${out}`);
    previousJoin = at(out, n, `ok: sza1220${n}\\.local joined`, restarted);
    assert.ok(previousJoin > restarted, `.${n}'s gate did not pass after its restart`);
  }
}

/** The real kubectl on the management cluster's real apiserver (KUBECONFIG: the lab's admin
 * kubeconfig, the one the stack's `kubeconfig` secret holds). */
const kubectl = (...args: string[]) => run("kubectl", ["--request-timeout=10s", ...args]);
const corednsValuesContent = () =>
  kubectl(
    "-n",
    "kube-system",
    "get",
    "helmchartconfig",
    "rke2-coredns",
    "-o",
    "jsonpath={.spec.valuesContent}",
  );

/** `kubectl patch` of the rke2-coredns HelmChartConfig's spec, as someone editing it by hand. */
const patchCorednsHelmChartConfig = (spec: Record<string, string>) =>
  kubectl(
    "-n",
    "kube-system",
    "patch",
    "helmchartconfig",
    "rke2-coredns",
    "--type=merge",
    "-p",
    JSON.stringify({ spec }),
  );

/** Applies manifests with the real kubectl, from a file. */
function kubectlApply(yaml: string) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "drain-")), "m.yaml");
  fs.writeFileSync(file, yaml);
  const r = kubectl("apply", "-f", file);
  fs.rmSync(path.dirname(file), { recursive: true });
  assert.equal(r.status, 0, r.stderr);
}

/**
 * Two pods a ReplicaSet would own (drain refuses pods without a controller), bound to servers as
 * the scheduler binds them: `held` on .21, Running and Ready as kubelet reports it, under a
 * PodDisruptionBudget that needs it (its status as the disruption controller writes it:
 * k8s.io/kubernetes@v1.35.4 pkg/controller/disruption/disruption.go updatePdbStatus, one healthy,
 * one desired, so no disruption allowed); `movable` on .22, free to go.
 */
function drainWorkloads() {
  const owner = (name: string) =>
    `  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: ${name}, uid: ${crypto.randomUUID()}, controller: true}\n`;
  const pod = (name: string, node: string) =>
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  namespace: drain-test\n  labels: {app: ${name}}\n${owner(name)}` +
    `spec:\n  nodeName: ${node}\n  automountServiceAccountToken: false\n  containers:\n  - {name: main, image: registry.invalid/app:1}\n`;
  kubectlApply(
    [
      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: drain-test\n",
      "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: drain-test\n",
      pod("held", "sza122021.local"),
      pod("movable", "sza122022.local"),
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: held\n  namespace: drain-test\n" +
        "spec:\n  minAvailable: 1\n  selector:\n    matchLabels: {app: held}\n",
    ].join("---\n"),
  );
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const status = (kind: string, name: string, body: object) =>
    assert.equal(
      kubectl(
        "-n",
        "drain-test",
        "patch",
        kind,
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status: body }),
      ).status,
      0,
    );
  status("pod", "held", {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }],
  });
  status("pdb", "held", {
    observedGeneration: 1,
    currentHealthy: 1,
    desiredHealthy: 1,
    expectedPods: 1,
    disruptionsAllowed: 0,
  });
}

/** Asserts that preview says each server is drained before the restart `why` (a pattern) brings. */
function previewSaysDrained(why: string) {
  const preview = pulumi("preview");
  assert.equal(preview.status, 0, preview.out);
  for (const n of servers)
    assert.match(
      preview.out,
      new RegExp(
        `sza1220${n}\\.local: drains sza1220${n}\\.local before RKE2 restarts there \\(${why}\\)`,
      ),
    );
}

/** Whether a Node is cordoned. */
const cordoned = (node: string) =>
  kubectl("get", "node", node, "-o", "jsonpath={.spec.unschedulable}").stdout === "true";

const isReject = (rule: string) => /-j REJECT --reject-with icmp-host-prohibited/.test(rule);

let checkout: string | undefined;

/**
 * .github/workflows/drift.yml as a runner runs it (test/support/workflow.ts), on a checkout
 * holding the local stack's file, with the backend and passphrase only as repository secrets.
 */
function driftWorkflow(): WorkflowRun {
  if (!checkout) {
    checkout = checkoutOf(REPO);
    fs.copyFileSync(
      path.join(REPO, "stacks", `Pulumi.${LAB_STACK}.yaml`),
      path.join(checkout, "stacks", `Pulumi.${LAB_STACK}.yaml`),
    );
  }
  const machine = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("PULUMI_")),
  );
  return runWorkflow(
    path.join(REPO, ".github", "workflows", "drift.yml"),
    checkout,
    {
      secrets: {
        PULUMI_BACKEND_URL: process.env.PULUMI_BACKEND_URL ?? "",
        PULUMI_CONFIG_PASSPHRASE: process.env.PULUMI_CONFIG_PASSPHRASE ?? "",
      },
      vars: { DRIFT_STACKS: JSON.stringify([LAB_STACK]) },
    },
    machine,
  );
}

function describeRun(run: WorkflowRun): string {
  return run.steps
    .map((s) => `[${s.job}] ${s.step}: ${s.status}\n${s.out.slice(-3000)}`)
    .join("\n");
}

describe("pulumi CLI on the local stack", function () {
  this.timeout(600000);

  before(() => {
    const r = pulumi("destroy", "--yes");
    assert.equal(r.status, 0, r.out);
    // Start from the estate as the seeds found it.
    for (const octet of [20, 21, 22, 30, 31])
      assert.equal(lab("reset-node", String(octet)).status, 0);
  });
  after(() => {
    if (checkout) fs.rmSync(checkout, { recursive: true, force: true });
  });

  it("previews without reaching any host", () => {
    // Block SSH from the operator namespace for the duration of the preview.
    const block = ["OUTPUT", "-p", "tcp", "--dport", "22", "-j", "REJECT"];
    assert.equal(run("iptables", ["-I", ...block]).status, 0);
    try {
      const r = pulumi("preview");
      assert.equal(r.status, 0, r.out);
      assert.match(r.out, /\+ \d+ to create/);
      assert.match(r.out, /preflight-sza122020\.local/);
    } finally {
      run("iptables", ["-D", ...block]);
    }
  });

  let upOutput = "";
  /** Every command line on the machine while that up ran. */
  let upCommandLines = new Set<string>();

  it("up converges the estate: records answer and nodes are prepared", async () => {
    const up = pulumiAsync(LAB_STACK, ["up", "--yes"]);
    upCommandLines = await sampleCommandLines(up);
    const r = await up;
    upOutput = r.out;
    assert.equal(r.status, 0, r.out);
    // Per-node progress reaches the Pulumi log.
    assert.match(r.out, /sza122020\.local: changed: disabled iptables\.service/);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
    // The servers joined one at a time: each started only after the previous one's gate passed.
    const joined = (n: string) => r.out.indexOf(`sza1220${n}.local: ok: sza1220${n}.local joined`);
    const started = (n: string) =>
      r.out.search(new RegExp(`sza1220${n}\\.local: (changed: started|ok: rke2-server)`));
    assert.ok(
      joined("20") >= 0 && joined("20") < started("21"),
      "server .21 started before .20 had joined",
    );
    assert.ok(
      joined("21") >= 0 && joined("21") < started("22"),
      "server .22 started before .21 had joined",
    );
    const members = run("ip", [
      "netns",
      "exec",
      labNs("n20"),
      "etcdctl",
      "--endpoints",
      "http://127.0.0.1:2379",
      "member",
      "list",
    ]);
    // RKE2 names members <node-name>-<8 hex>; the third column is the name, the last the learner flag.
    assert.deepEqual(
      members.stdout
        .trim()
        .split("\n")
        .map((l) =>
          l
            .split(", ")
            .slice(1, 3)
            .concat(l.split(", ")[5])
            .join(" ")
            .replace(/-[0-9a-f]{8} /, " "),
        )
        .sort(),
      [
        "started sza122020.local false",
        "started sza122021.local false",
        "started sza122022.local false",
      ],
    );
    for (const octet of [20, 21, 22, 30, 31]) {
      assert.ok(!ruleset(octet).some(isReject), `REJECT rule left on .${octet}`);
      assert.equal(unitState(octet, "iptables.service").enabled, false);
      assert.equal(
        unitState(octet, "iptables.service").active,
        true,
        "iptables.service was stopped",
      );
    }
  });

  it("registered uat1 as Rancher's planner needs: the first group (.31 etcd+controlplane, .30 worker) before any sync", () => {
    // The Rancher stand-in's record of the cluster (test/lab/rancher-standin/server.ts).
    const clusters = JSON.parse(
      fs.readFileSync(path.join(LAB_DIR, "rancher", "clusters.json"), "utf8"),
    ) as {
      name: string;
      registrationToken: string;
      rke2Token: string;
      conditions: { type: string; status: string }[];
      machines: {
        address: string;
        roles: { etcd: boolean; controlplane: boolean; worker: boolean };
        planChecksum?: string;
        appliedChecksum?: string;
      }[];
    }[];
    const cluster = clusters.find((c) => c.name === "uat1");
    assert.ok(cluster, "Rancher has no cluster uat1");
    assert.equal(cluster.conditions.find((c) => c.type === "Updated")?.status, "True");
    assert.deepEqual(
      cluster.machines
        .map((m) => [m.address, m.roles, !!m.planChecksum && m.planChecksum === m.appliedChecksum])
        .sort(),
      [
        ["192.168.122.30", { etcd: false, controlplane: false, worker: true }, true],
        ["192.168.122.31", { etcd: true, controlplane: true, worker: false }, true],
      ],
    );
    const out = upOutput;
    const registering = (n: string) => out.indexOf(`node sza1220${n}.local: changed: registering`);
    const synced = out.indexOf("rancher-uat1-sync-sza122031.local created");
    // rancher/rancher@v2.14.3 pkg/capr/planner/planner.go (clusterIsSane): no plan before an
    // etcd, a controlplane and a worker node are registered, so no sync may come between them.
    assert.ok(registering("31") >= 0 && registering("30") >= 0, "a node did not register");
    assert.ok(synced > registering("31") && synced > registering("30"), "a sync came first");
    assert.ok(unitState(30, "rke2-agent.service").active, "the worker's RKE2 agent did not start");
    // No 8 characters of the registration token, the cluster's RKE2 token or the API token's
    // secret reach the Pulumi log, nor the stack's state (what carries them is stored
    // encrypted), nor any command line on the machine while up ran but the one upstream's
    // installer starts (test/support/secret-traces.ts).
    const apiToken = fs.readFileSync(path.join(LAB_DIR, "rancher", "api-token"), "utf8").trim();
    const secrets = [
      cluster.registrationToken,
      cluster.rke2Token,
      apiToken.slice(apiToken.indexOf(":") + 1),
    ];
    assert.equal(sliceOf(secrets, out), undefined, "a token's slice is in pulumi's output");
    const stateDir = path.join(LAB_DIR, "state", ".pulumi", "stacks");
    const states = fs
      .readdirSync(stateDir, { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".json"))
      .map((f) => fs.readFileSync(path.join(stateDir, f), "utf8"));
    assert.ok(states.length > 0, `no state file under ${stateDir}`);
    for (const state of states)
      assert.equal(sliceOf(secrets, state), undefined, "a token's slice is in the state");
    // The registrations ran while the command lines were sampled: the installer's shell.
    assert.ok(
      [...upCommandLines].some((c) => /^(ba)?sh -s\b/.test(c)),
      "never saw the installer's shell",
    );
    assert.deepEqual(commandLineLeaks(upCommandLines, secrets), []);
  });

  it("exports the rancher output a downstream stack reads: Rancher's URL, CA, servers, and what it declares", () => {
    const r = pulumi("stack", "output", "rancher", "--json");
    assert.equal(r.status, 0, r.out);
    const rancher = JSON.parse(r.out) as {
      url: string;
      caCertificate: string | null;
      addresses: string[];
      downstreamClusters: string[];
      nodes: { name: string; ip: string }[];
    };
    assert.equal(rancher.url, "https://ai-ear.cn");
    // The lab's Rancher stand-in serves the CA the stack pins, with its final newline.
    assert.match(
      rancher.caCertificate ?? "",
      /^-----BEGIN CERTIFICATE-----\n[^]*-----END CERTIFICATE-----\n$/,
    );
    assert.deepEqual(rancher.addresses, SERVERS);
    assert.deepEqual(rancher.downstreamClusters, ["uat1"]);
    assert.ok(rancher.nodes.some((n) => n.ip === "192.168.122.30" && n.name === "sza122030.local"));
  });

  it("exports the management cluster's kubeconfig, a secret that reaches the first server's real kube-apiserver from the operator", () => {
    const hidden = pulumi("stack", "output", "managementCluster", "--json");
    assert.equal(hidden.status, 0, hidden.out);
    assert.equal((JSON.parse(hidden.out) as { kubeconfig: string }).kubeconfig, "[secret]");
    const r = pulumi("stack", "output", "managementCluster", "--json", "--show-secrets");
    assert.equal(r.status, 0, r.out);
    const { kubeconfig } = JSON.parse(r.out) as { kubeconfig: string };
    assert.match(kubeconfig, /server: https:\/\/192\.168\.122\.20:6443/);
    const file = path.join(LAB_DIR, "management.kubeconfig");
    fs.writeFileSync(file, kubeconfig, { mode: 0o600 });
    try {
      const nodes = run("kubectl", [
        "--kubeconfig",
        file,
        "--request-timeout=20s",
        "get",
        "nodes",
        "-o",
        "name",
      ]);
      assert.equal(nodes.status, 0, `${nodes.stdout}${nodes.stderr}`);
      for (const n of ["20", "21", "22"])
        assert.match(nodes.stdout, new RegExp(`node/sza1220${n}\\.local`));
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it("finds no drift right after up", () => {
    const r = pulumi("preview", "--refresh", "--expect-no-changes");
    assert.equal(r.status, 0, r.out);
  });

  it("doctor finds no cause on the converged estate, from the stack file alone, and exits 0", () => {
    const r = spawnSync(
      "node",
      [path.join(REPO, "bin", "infra", "cli", "doctor.js"), "--stack", LAB_STACK, "--json"],
      { encoding: "utf8", timeout: 120000 },
    );
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const report = JSON.parse(r.stdout) as { hosts: number; findings: unknown[] };
    assert.equal(report.hosts, 6, "the five nodes and the KVM host");
    assert.deepEqual(report.findings, []);
  });

  it("the drift workflow, run step by step on a checkout, passes on the converged estate", () => {
    const run = driftWorkflow();
    assert.equal(run.ok, true, describeRun(run));
    assert.match(
      run.steps[run.steps.length - 1].step,
      /pulumi preview .*--refresh --expect-no-changes/,
    );
  });

  it("detects a DNS record removed and iptables.service re-enabled by hand", async () => {
    handDeleteDnsHost("192.168.122.21");
    const enable = await runScript(nodeConnection(22), "systemctl enable iptables.service");
    assert.equal(enable.exitCode, 0);
    const r = pulumi("preview", "--refresh", "--expect-no-changes", "--diff");
    assert.notEqual(r.status, 0, "drift went unnoticed");
    assert.match(r.out, /libvirt-dns-hosts/);
    assert.match(r.out, /prepare-sza122022\.local-host/);
    assert.match(r.out, /firewallServicesDisabled/);
    // The scheduled workflow fails on it too, at its preview.
    const run = driftWorkflow();
    assert.equal(run.ok, false, describeRun(run));
    const failed = run.steps[run.steps.length - 1];
    assert.match(failed.step, /pulumi preview .*--expect-no-changes/);
    assert.match(failed.out, /libvirt-dns-hosts/);
  });

  it("up --refresh repairs the drift", () => {
    const r = pulumi("up", "--yes", "--refresh");
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
    assert.equal(unitState(22, "iptables.service").enabled, false);
    assert.equal(pulumi("preview", "--refresh", "--expect-no-changes").status, 0);
  });

  it("an unchanged stack restarts nothing", () => {
    const before = history();
    const r = pulumi("up", "--yes");
    assert.equal(r.status, 0, r.out);
    assert.doesNotMatch(r.out, /changed: (re)?started rke2-server/);
    assert.deepEqual(history(), before);
  });

  // HelmChartConfig delivery through the real kubernetes provider, on the management cluster's
  // real apiserver, which the RKE2 stand-in runs on each server.
  it("rke2.dnsDelivery helmChartConfig creates the HelmChartConfig and the DNS NetworkPolicies on the apiserver", () => {
    // Rancher's namespace exists on a management cluster, here with an egress restriction of
    // its own: only then does the DNS egress policy go there, as an allowance (the live check
    // reads the namespace's policies through the stack's kubeconfig).
    const ns = kubectl("create", "namespace", "cattle-system");
    assert.ok(ns.status === 0 || /AlreadyExists/.test(ns.stderr), ns.stderr);
    const deny = kubectl(
      "-n",
      "cattle-system",
      "create",
      "-f",
      path.join(REPO, "test", "fixtures", "default-deny-egress.yaml"),
    );
    assert.ok(deny.status === 0 || /AlreadyExists/.test(deny.stderr), deny.stderr);
    assert.equal(
      pulumi("config", "set", "--path", "dns.policyNamespaces[1]", "cattle-system").status,
      0,
    );
    assert.equal(
      pulumi("config", "set", "--path", "rke2.dnsDelivery", "helmChartConfig").status,
      0,
    );
    // The cluster's operators customised CoreDNS themselves (rke2-docs' HelmChartConfig way): more
    // replicas, a tuned cache, a stub zone for their corporate DNS.
    const operators = kubectl(
      "apply",
      "-f",
      path.join(REPO, "test", "fixtures", "operator-rke2-coredns.yaml"),
    );
    assert.equal(operators.status, 0, operators.stderr);
    const preview = pulumi("preview", "--diff");
    assert.equal(preview.status, 0, preview.out);
    assert.match(
      preview.out,
      /rke2-coredns of cluster management was written by hand; its values are kept beside the fix: replicaCount, servers\[\.:53\]\.cache, servers\[corp\.example:53\]/,
    );
    const r = pulumi("up", "--yes");
    assert.equal(r.status, 0, r.out);
    const got = corednsValuesContent();
    assert.equal(got.status, 0, got.stderr);
    assert.match(got.stdout, /ai-ear\.cn/);
    // Theirs survived beside the fix.
    const values = YAML.parse(got.stdout) as {
      replicaCount?: number;
      servers: { zones: { zone: string }[]; plugins: { name: string; parameters?: string }[] }[];
    };
    assert.equal(values.replicaCount, 2);
    const root = values.servers.find((s) => s.zones.some((z) => z.zone === "."));
    assert.equal(root?.plugins.find((p) => p.name === "cache")?.parameters, "300");
    assert.equal(root?.plugins.find((p) => p.name === "forward")?.parameters, ". 192.168.122.1");
    assert.ok(values.servers.some((s) => s.zones.some((z) => z.zone === "corp.example")));
    for (const namespace of ["default", "cattle-system"]) {
      const np = kubectl("-n", namespace, "get", "networkpolicy", "-o", "json");
      assert.equal(np.status, 0, np.stderr);
      const ports = (
        JSON.parse(np.stdout) as {
          items: { spec: { egress?: { ports?: { protocol?: string; port?: number }[] }[] } }[];
        }
      ).items.flatMap((i) => (i.spec.egress ?? []).flatMap((e) => e.ports ?? []));
      assert.ok(
        ports.some((p) => p.protocol === "UDP" && p.port === 53) &&
          ports.some((p) => p.protocol === "TCP" && p.port === 53),
        `no UDP and TCP 53 egress in ${namespace}: ${np.stdout}`,
      );
    }
    // The apiserver validates against the CRD: a value outside its schema is refused.
    const bad = patchCorednsHelmChartConfig({ failurePolicy: "ignore" });
    assert.notEqual(bad.status, 0, "the apiserver accepted failurePolicy: ignore");
    assert.match(bad.stderr, /failurePolicy/);
  });

  it("a kubectl edit of the HelmChartConfig is drift; up --refresh puts the values back", () => {
    try {
      const delivered = corednsValuesContent().stdout;
      const edit = patchCorednsHelmChartConfig({ valuesContent: "servers: []\n" });
      assert.equal(edit.status, 0, edit.stderr);
      const preview = pulumi("preview", "--refresh", "--expect-no-changes", "--diff");
      assert.notEqual(preview.status, 0, "the edit went unnoticed");
      assert.match(preview.out, /rke2-coredns/);
      const r = pulumi("up", "--yes", "--refresh");
      assert.equal(r.status, 0, r.out);
      assert.equal(corednsValuesContent().stdout, delivered);
      assert.equal(pulumi("preview", "--refresh", "--expect-no-changes").status, 0);
    } finally {
      // Back to the server manifest and the stack's own DNS policy namespaces for the tests
      // that follow: cattle-system's check needs its apiserver, which later cases stop.
      assert.equal(pulumi("config", "rm", "--path", "rke2.dnsDelivery").status, 0);
      assert.equal(pulumi("config", "rm", "--path", "dns.policyNamespaces[1]").status, 0);
      const r = pulumi("up", "--yes");
      assert.equal(r.status, 0, r.out);
    }
  });

  it("cluster DNS on the real kubernetes plugin: a pod resolves kubernetes.default and a new Service through node-local DNS, CoreDNS and the apiserver; seed 000's fix breaks both", () => {
    const svc = createClusterIpService(kubectl, "dns-path-check");
    assert.equal(svc.status, 0, svc.stderr);
    const ipOf = (name: string) =>
      kubectl(
        "-n",
        "default",
        "get",
        "service",
        name,
        "-o",
        "jsonpath={.spec.clusterIP}",
      ).stdout.trim();
    const apiIp = ipOf("kubernetes");
    const svcIp = ipOf("dns-path-check");
    assert.match(svcIp, /^10\.13\./);
    const pod = labNs("pod");
    const lookup = (name: string) => inNamespace(pod, ["getent", "ahosts", name], 60000);
    const addresses = (out: string) => [
      ...new Set(
        out
          .split("\n")
          .filter(Boolean)
          .map((l) => l.split(/\s+/)[0]),
      ),
    ];
    try {
      assert.equal(lab("dns", "stack", "api").status, 0);
      const api = lookup("kubernetes.default.svc.cluster.local");
      assert.equal(api.status, 0, api.stderr);
      assert.deepEqual(addresses(api.stdout), [apiIp]);
      // The short name through the pod's search list, as an application looks it up.
      const short = lookup("dns-path-check");
      assert.equal(short.status, 0, short.stderr);
      assert.deepEqual(addresses(short.stdout), [svcIp]);
      const rancher = lookup("ai-ear.cn");
      assert.equal(rancher.status, 0, rancher.stderr);
      assert.deepEqual(addresses(rancher.stdout).sort(), SERVERS);

      // Seed 000's own fix: its `local` block takes every *.cluster.local query.
      assert.equal(lab("dns", "seed", "api").status, 0);
      for (const name of [
        "kubernetes.default.svc.cluster.local",
        "dns-path-check.default.svc.cluster.local",
      ]) {
        const r = inNamespace(pod, ["dig", "+time=3", "+tries=1", name]);
        assert.match(r.stdout, /status: NXDOMAIN/, `${name} still resolves under seed 000's fix`);
      }
    } finally {
      assert.equal(lab("dns", "stack").status, 0);
      kubectl("-n", "default", "delete", "service", "dns-path-check");
    }
  });

  it("a config.yaml and a registries.yaml change restart the servers one at a time, each behind its join gate; the registry password stays a secret", () => {
    assert.equal(pulumi("config", "set", "--path", "rke2.etcdSnapshot.retention", "6").status, 0);
    // The seed estate's registry, plain HTTP, with a password the test makes.
    const mirrorKey = `rke2.registries.mirrors["${REGISTRY}"].endpoint[0]`;
    assert.equal(pulumi("config", "set", "--path", mirrorKey, `http://${REGISTRY}`).status, 0);
    const auth = JSON.stringify({
      [REGISTRY]: { username: "lab-pull", password: REGISTRY_PASSWORD },
    });
    assert.equal(pulumi("config", "set", "--secret", "registryAuth", auth).status, 0);
    const preview = pulumi("preview", "--diff");
    assert.equal(preview.status, 0, preview.out);
    // The diff names the key that changes, on each server.
    assert.match(preview.out, /management-start-sza122020\.local[\s\S]*etcd-snapshot-retention/);
    assert.match(
      preview.out,
      /management-start-sza122022\.local[\s\S]*mirrors\/192\.168\.122\.156:30000/,
    );
    const r = pulumi("up", "--yes");
    assert.equal(r.status, 0, r.out);
    assertRolling(r.out);
    const exported = pulumi("stack", "export");
    assert.equal(exported.status, 0, exported.out);
    for (const text of [preview.out, r.out, exported.out])
      assert.ok(!text.includes(REGISTRY_PASSWORD), "the registry password reached output or state");
    for (const n of servers) {
      // registries.yaml as RKE2 reads it: the mirror over http://, the credentials, owner-only;
      // the stand-in loaded it when the restart started it again.
      const file = nodeFile(Number(n), "/etc/rancher/rke2/registries.yaml");
      assert.deepEqual(YAML.parse(fs.readFileSync(file, "utf8")), {
        mirrors: { [REGISTRY]: { endpoint: [`http://${REGISTRY}`] } },
        configs: { [REGISTRY]: { auth: { username: "lab-pull", password: REGISTRY_PASSWORD } } },
      });
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.match(
        fs.readFileSync(unitLog(Number(n), "rke2-server.service"), "utf8"),
        /Using private registry config file at \/etc\/rancher\/rke2\/registries\.yaml/,
      );

      const dir = path.dirname(nodeFile(Number(n), "/etc/rancher/rke2/config.yaml"));
      assert.match(
        fs.readFileSync(path.join(dir, "config.yaml"), "utf8"),
        /etcd-snapshot-retention: 6/,
      );
      // The replaced file is kept beside it, owner-only.
      const kept = fs
        .readdirSync(dir)
        .filter((f) => /^config\.yaml\.\d{8}T\d{6}Z$/.test(f))
        .sort();
      assert.ok(kept.length > 0, `sza1220${n}.local kept no copy of the replaced config.yaml`);
      const newest = kept[kept.length - 1];
      assert.match(fs.readFileSync(path.join(dir, newest), "utf8"), /etcd-snapshot-retention: 5/);
      assert.equal(fs.statSync(path.join(dir, newest)).mode & 0o777, 0o600);
    }
  });

  it(`with rke2.drain, the upgrade to ${UPGRADE_TO} is stopped at .21 by a PodDisruptionBudget: preview names the drains, the pod is named, .21 stays cordoned and not restarted, .20 is drained, upgraded and uncordoned`, () => {
    drainWorkloads();
    for (const [key, value] of [
      ["rke2.drain.enabled", "true"],
      ["rke2.drain.timeoutSeconds", "10"],
      ["rke2.version", UPGRADE_TO],
    ])
      assert.equal(pulumi("config", "set", "--path", key, value).status, 0);
    previewSaysDrained("version");
    const before = history();
    const r = pulumi("up", "--yes");
    assert.notEqual(r.status, 0, r.out);
    assert.match(
      r.out,
      /draining sza122021\.local did not finish: these pods were not evicted within 10 s: drain-test\/held \(a PodDisruptionBudget refuses, or they did not end\)\. sza122021\.local stays cordoned and RKE2 was not restarted there/,
    );
    const after = history();
    assert.ok(after[0] > before[0], ".20 was not restarted");
    assert.deepEqual(after.slice(1), before.slice(1), ".21 or .22 restarted");
    const drained = at(r.out, "20", "changed: drained sza122020\\.local");
    const installed = at(r.out, "20", `changed: installed RKE2 ${UPGRADE_TO.replace("+", "\\+")}`);
    const uncordoned = at(r.out, "20", "changed: uncordoned sza122020\\.local");
    assert.ok(drained >= 0 && drained < installed && installed < uncordoned, r.out);
    assert.equal(cordoned("sza122020.local"), false);
    assert.equal(cordoned("sza122021.local"), true);
    assert.equal(cordoned("sza122022.local"), false);
  });

  it(`rke2.drain.podSelector leaves the held pod alone: the re-run upgrades .21 then .22 to ${UPGRADE_TO}, each drained (.22's pod evicted), restarted behind its gate and uncordoned; .20, left cordoned for a restart, is made schedulable`, () => {
    assert.equal(
      pulumi("config", "set", "--path", "rke2.drain.podSelector", "app!=held").status,
      0,
    );
    // As a run that stopped after .20's restart, before its uncordon, leaves it.
    assert.equal(kubectl("cordon", "sza122020.local").status, 0);
    const mark = "rke2-remediation/cordoned-for-restart=true";
    assert.equal(kubectl("annotate", "node", "sza122020.local", mark).status, 0);
    const r = pulumi("up", "--yes");
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /sza122020\.local: changed: uncordoned sza122020\.local/);
    assert.equal(cordoned("sza122020.local"), false);
    for (const n of ["21", "22"]) {
      const drained = at(r.out, n, `changed: drained sza1220${n}\\.local`);
      const restarted = at(r.out, n, "changed: restarted rke2-server\\.service");
      const uncordoned = at(r.out, n, `changed: uncordoned sza1220${n}\\.local`);
      assert.ok(drained >= 0 && drained < restarted && restarted < uncordoned, r.out);
      assert.equal(cordoned(`sza1220${n}.local`), false);
    }
    // One at a time: .22 restarts only once .21's gate passed.
    const joined21 = at(r.out, "21", "ok: sza122021\\.local joined");
    assert.ok(
      joined21 >= 0 && at(r.out, "22", "changed: restarted rke2-server\\.service") > joined21,
      r.out,
    );
    for (const n of servers)
      assert.match(
        fs.readFileSync(nodeFile(Number(n), "/usr/local/bin/rke2"), "utf8"),
        new RegExp(UPGRADE_TO.replace("+", "\\+")),
      );
    assert.equal(kubectl("-n", "drain-test", "get", "pod", "held").status, 0);
    assert.match(kubectl("-n", "drain-test", "get", "pod", "movable").stderr, /NotFound/);
    assert.equal(pulumi("preview", "--refresh", "--expect-no-changes").status, 0);
    // The later cases restart servers with the first one down: they run without draining, and
    // turning it off changes no host.
    assert.equal(pulumi("config", "rm", "--path", "rke2.drain").status, 0);
    const cleared = kubectl(
      "-n",
      "drain-test",
      "delete",
      "pod,pdb",
      "--all",
      "--grace-period=0",
      "--force",
    );
    assert.equal(cleared.status, 0, cleared.stderr);
    const before = history();
    const off = pulumi("up", "--yes");
    assert.equal(off.status, 0, off.out);
    assert.deepEqual(history(), before);
  });

  it("refresh sees a stopped server, a hand-edited managed key and a wrong installed version, and keeps keys it does not manage", async () => {
    assert.equal((await runScript(nodeConnection(22), "systemctl stop rke2-server")).exitCode, 0);
    const config21 = nodeFile(21, "/etc/rancher/rke2/config.yaml");
    fs.writeFileSync(
      config21,
      fs
        .readFileSync(config21, "utf8")
        .replace(/etcd-snapshot-retention: \d+/, "etcd-snapshot-retention: 9")
        .concat("# edited by hand\nselinux: true\n"),
    );
    // registries.yaml edited by hand: the mirror over HTTPS, which the registry does not speak.
    const registries22 = nodeFile(22, "/etc/rancher/rke2/registries.yaml");
    fs.writeFileSync(
      registries22,
      fs.readFileSync(registries22, "utf8").replace(`http://${REGISTRY}`, `https://${REGISTRY}`),
    );
    fs.writeFileSync(
      nodeFile(20, "/usr/local/bin/rke2"),
      // One minor behind the stack's release: a step RKE2 supports, so up repairs it.
      '#!/bin/sh\necho "rke2 version v1.35.7+rke2r1 (lab-standin)"\n',
    );
    const r = pulumi("preview", "--refresh", "--expect-no-changes", "--diff");
    assert.notEqual(r.status, 0, "drift of RKE2 went unnoticed");
    for (const n of servers)
      assert.match(r.out, new RegExp(`management-start-sza1220${n}\\.local`));
    assert.match(r.out, /managedRegistries[\s\S]*mirrors\/192\.168\.122\.156:30000/);
    const up = pulumi("up", "--yes", "--refresh");
    assert.equal(up.status, 0, up.out);
    assert.equal(unitState(22, "rke2-server.service").active, true);
    assert.match(
      fs.readFileSync(nodeFile(20, "/usr/local/bin/rke2"), "utf8"),
      new RegExp(UPGRADE_TO.replace("+", "\\+")),
    );
    const repaired = fs.readFileSync(config21, "utf8");
    assert.match(repaired, /etcd-snapshot-retention: 6/);
    assert.match(repaired, /# edited by hand\nselinux: true/);
    assert.match(fs.readFileSync(registries22, "utf8"), new RegExp(`- http://${REGISTRY}`));
    assert.equal(pulumi("preview", "--refresh", "--expect-no-changes").status, 0);
  });

  it("a rebuilt first server is refused a new cluster; the others keep their etcd data", async () => {
    const db = nodeFile(20, "/var/lib/rancher/rke2/server/db");
    const dataOf = (n: number) =>
      fs.readdirSync(path.join(nodeFile(n, "/var/lib/rancher/rke2/server/db"), "etcd", "member"));
    const kept = [dataOf(21), dataOf(22)];
    assert.equal((await runScript(nodeConnection(20), "systemctl stop rke2-server")).exitCode, 0);
    fs.renameSync(db, `${db}.rebuilt-by-test`);
    // Only the first server's step: the cluster DNS check reads the cluster through this
    // server's apiserver, which is down here, and would stop the run first, in parallel.
    const firstServerStep =
      `urn:pulumi:${LAB_STACK}::rke2-remediation::rke2remediation:rke2:Cluster` +
      "$pulumi-nodejs:dynamic/rke2:NodeStart::management-start-sza122020.local";
    try {
      const r = pulumi("up", "--yes", "--refresh", "--target", firstServerStep);
      assert.notEqual(r.status, 0, r.out);
      assert.match(
        r.out,
        /sza122020\.local is listed first and holds no etcd data.*sza122021\.local, sza122022\.local already hold etcd data\. Nothing was changed/,
      );
      assert.equal(fs.existsSync(db), false, "a new cluster was started on .20");
      assert.deepEqual([dataOf(21), dataOf(22)], kept);
      for (const n of [21, 22]) assert.equal(unitState(n, "rke2-server.service").active, true);
    } finally {
      fs.rmSync(db, { recursive: true, force: true });
      fs.renameSync(`${db}.rebuilt-by-test`, db);
    }
    // Its data back, the first server starts again as the member it was; then the whole stack.
    const restart = pulumi("up", "--yes", "--refresh", "--target", firstServerStep);
    assert.equal(restart.status, 0, restart.out);
    const r = pulumi("up", "--yes", "--refresh");
    assert.equal(r.status, 0, r.out);
    assert.equal(pulumi("preview", "--refresh", "--expect-no-changes").status, 0);
  });

  it("an unreachable node fails with its name and address while the others converge", () => {
    const node = "nodes[5]";
    const settings: [string, string][] = [
      [`${node}.name`, "sza122040.local"],
      [`${node}.ip`, "192.168.122.40"],
      [`${node}.cluster`, "uat1"],
      [`${node}.roles[0]`, "worker"],
      [
        `${node}.ssh.hostKey`,
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLXN6YTEyMjA0MC0tLS0tLS0tLS0t",
      ],
    ];
    for (const [key, value] of settings)
      assert.equal(pulumi("config", "set", "--path", key, value).status, 0);
    try {
      // Undo one node's preparation by hand, so there is work for the reachable nodes too.
      addRejectRule(31);
      const r = pulumi("up", "--yes", "--refresh");
      assert.notEqual(r.status, 0, r.out);
      assert.match(r.out, /node sza122040\.local: cannot reach root@192\.168\.122\.40:22/);
      assert.ok(!ruleset(31).some(isReject), "the reachable node .31 was not converged");
    } finally {
      pulumi("config", "rm", "--path", node);
    }
    assert.equal(pulumi("up", "--yes").status, 0);
  });

  it("runs the policy pack in a preview and blocks an unsafe setting", () => {
    const ok = pulumi("preview", "--policy-pack", "policy");
    assert.equal(ok.status, 0, ok.out);
    assert.match(ok.out, /rke2-remediation/);
    const set = pulumi(
      "config",
      "set",
      "--path",
      "nodePreparation.unmanagedDevices[0]",
      "kube-ipvs0",
    );
    assert.equal(set.status, 0, set.out);
    try {
      const bad = pulumi("preview", "--policy-pack", "policy");
      assert.notEqual(bad.status, 0, bad.out);
      assert.match(bad.out, /cni-devices-unmanaged/);
    } finally {
      pulumi("config", "rm", "nodePreparation");
    }
  });

  it("destroy leaves the hosts as they are", () => {
    const r = pulumi("destroy", "--yes");
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS, "destroy took the Rancher records away");
    assert.equal(
      unitState(20, "iptables.service").enabled,
      false,
      "destroy re-enabled iptables.service",
    );
  });
});
