/**
 * Registering the downstream cluster uat1 (.31 etcd+controlplane, .30 worker) with the lab's
 * Rancher stand-in on .20:443 (HTTPS, lab CA; ai-ear.cn through the libvirt network's dnsmasq).
 * First the stand-in itself, driven as Rancher's own installer is run by hand: it must show what
 * Rancher v2.14.3 does (no plan before etcd, controlplane and worker are registered; workers held
 * until the cluster agent connects; the CA checksum over /cacerts with its trailing newline).
 * Then the product: `pulumi up --stack local` against it, first with the cluster DNS as seed 000
 * found it (the cluster agent cannot resolve Rancher), then with the stack's DNS fix.
 */
import * as assert from "assert/strict";
import { createHash } from "crypto";
import * as fs from "fs";
import * as https from "https";
import * as path from "path";
import { clusterProgress, waitForCluster } from "../../components/rancher-cluster/cluster-wait";
import { pulumiAsync, pulumiOn } from "../e2e/cli";
import { commandLineLeaks, sampleCommandLines, sliceOf } from "../support/secret-traces";
import {
  handDeleteDnsHost,
  inNamespace,
  lab,
  LAB_DIR,
  LAB_STACK,
  labNs,
  nodeFile,
  REPO,
  unitState,
} from "./lab";
import {
  ALLOW_HTTPS,
  API_TOKEN,
  CA,
  ClusterView,
  FIRST,
  newCluster,
  onNode,
  rancher,
  RANCHER_IP,
  reachRancher,
  SERVER,
  sha256,
  sleep,
  WORKER,
} from "./rancher-lab";

const updated = (c: ClusterView) => c.conditions.find((x) => x.type === "Updated");

/** Polls the management cluster until `done` holds; fails with the last view after `seconds`. */
async function until(id: string, done: (c: ClusterView) => boolean, seconds = 90) {
  let view = (await rancher("GET", `/v3/clusters/${id}`)) as unknown as ClusterView;
  for (let waited = 0; !done(view); waited++) {
    if (waited >= seconds) assert.fail(`cluster ${id} never got there: ${JSON.stringify(view)}`);
    await sleep(1000);
    view = (await rancher("GET", `/v3/clusters/${id}`)) as unknown as ClusterView;
  }
  return view;
}

/**
 * Rancher's installer as its node command runs it: the token in the environment, the server and
 * the checksum as install.sh's arguments (the served installer assigns Rancher's own values to
 * CATTLE_SERVER and CATTLE_CA_CHECKSUM, which only arguments override).
 */
function install(octet: number, cluster: ClusterView, roles: string, checksum?: string) {
  const fromCommand = /--ca-checksum ([0-9a-f]{64})/.exec(cluster.registrationToken.nodeCommand);
  return onNode(
    octet,
    `curl -fsSL --insecure ${SERVER}/system-agent-install.sh | sh -s - ${roles} --server ${SERVER} --ca-checksum ${checksum ?? fromCommand![1]}\n`,
    { CATTLE_TOKEN: cluster.registrationToken.token },
  );
}

function connectionInfo(octet: number) {
  const file = nodeFile(octet, "/var/lib/rancher/agent/rancher2_connection_info.json");
  return JSON.parse(fs.readFileSync(file, "utf8")) as {
    kubeConfig: string;
    namespace: string;
    secretName: string;
  };
}

async function planSecret(octet: number) {
  const info = connectionInfo(octet);
  return (await rancher(
    "GET",
    `/api/v1/namespaces/${info.namespace}/secrets/${info.secretName}`,
  )) as { metadata: { labels: Record<string, string> }; data: Record<string, string> };
}

function clusterAgentLog(octet: number): string {
  const pods = nodeFile(octet, "/var/log/pods");
  if (!fs.existsSync(pods)) return "";
  return fs
    .readdirSync(pods)
    .filter((d) => d.startsWith("cattle-system_cattle-cluster-agent-"))
    .map((d) => path.join(pods, d, "cluster-register", "0.log"))
    .filter((f) => fs.existsSync(f))
    .map((f) => fs.readFileSync(f, "utf8"))
    .join("");
}

/**
 * The product's cluster wait, as ClusterSync runs it, following the worker's machine (.30) in
 * `cluster`; its lines go to `log`, and `onInfo` runs at each of its info lines.
 */
function waitForWorker(cluster: ClusterView, log: string[], onInfo = () => {}) {
  const info = connectionInfo(WORKER);
  return waitForCluster(
    {
      cluster: cluster.name,
      after: "worker",
      apiToken: API_TOKEN,
      timeoutSeconds: 120,
      pollSeconds: 1,
      machines: [{ node: "n30", namespace: info.namespace, secretName: info.secretName }],
    },
    {
      fetchCluster: () => rancher("GET", `/v3/clusters/${cluster.id}`),
      fetchPlanSecret: (m) =>
        rancher("GET", `/api/v1/namespaces/${m.namespace}/secrets/${m.secretName}`),
      checkAgent: async () => "",
      now: () => Date.now(),
      sleep,
      info: (line) => {
        log.push(line);
        onInfo();
      },
      warn: (line) => log.push(line),
    },
  );
}

function labDns(mode: string) {
  const r = lab("dns", mode);
  assert.equal(r.status, 0, r.stderr);
}

describe("Rancher stand-in: what Rancher v2.14.3 does with registered nodes", function () {
  this.timeout(300000);
  let cluster: ClusterView;
  let addedRecord = false;

  before(async () => {
    for (const node of [FIRST, WORKER]) assert.equal(lab("reset-node", String(node)).status, 0);
    addedRecord = reachRancher();
    cluster = await newCluster("standin");
    assert.match(cluster.id, /^c-m-[0-9a-z]{8}$/);
  });

  after(async () => {
    labDns("stack");
    if (cluster) await rancher("DELETE", `/v3/clusters/${cluster.id}`);
    inNamespace(labNs("n20"), ["iptables", "-D", ...ALLOW_HTTPS]);
    if (addedRecord) handDeleteDnsHost(RANCHER_IP);
    for (const node of [FIRST, WORKER]) lab("reset-node", String(node));
  });

  it("serves /cacerts with a trailing newline; both node commands pin its SHA-256", async () => {
    const served = await new Promise<string>((resolve, reject) =>
      https
        .get({ host: RANCHER_IP, servername: "ai-ear.cn", path: "/cacerts", ca: CA }, (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve(text));
        })
        .on("error", reject),
    );
    assert.ok(served.endsWith("-----END CERTIFICATE-----\n"), served);
    const checksum = sha256(served);
    assert.notEqual(checksum, sha256(served.trimEnd()));
    for (const command of [
      cluster.registrationToken.nodeCommand,
      cluster.registrationToken.insecureNodeCommand,
    ])
      assert.ok(command.endsWith(` --ca-checksum ${checksum}`), command);
    assert.match(cluster.registrationToken.insecureNodeCommand, /^ curl --insecure -fL /);
  });

  it("serves the installer as Rancher does: strict verification, Rancher's server and CA checksum before install.sh", async () => {
    const served = await new Promise<string>((resolve, reject) =>
      https
        .get(
          { host: RANCHER_IP, servername: "ai-ear.cn", path: "/system-agent-install.sh", ca: CA },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => (text += c.toString()));
            res.on("end", () => resolve(text));
          },
        )
        .on("error", reject),
    );
    const checksum = /--ca-checksum ([0-9a-f]{64})/.exec(cluster.registrationToken.nodeCommand)![1];
    const header = served.split("\n").slice(0, 8).join("\n");
    assert.equal(
      header,
      [
        "#!/usr/bin/env sh",
        "export STRICT_VERIFY='true'",
        "",
        `CATTLE_AGENT_BINARY_BASE_URL="${SERVER}/assets"`,
        `CATTLE_SERVER=${SERVER}`,
        `CATTLE_CA_CHECKSUM="${checksum}"`,
        "",
        "",
      ].join("\n"),
    );
  });

  it("under strict verification, a checksum given in the environment alone is overridden by the served one", () => {
    // The environment's checksum is wrong, the served installer's assignment wins over it, and
    // without a --ca-checksum argument the served (right) one is verified: the installer goes
    // on past the CA check. The wrong token then stops it at the connection info.
    const r = onNode(
      FIRST,
      `timeout 12 sh -c 'curl -fsSL --insecure ${SERVER}/system-agent-install.sh | sh -s - --etcd'\n`,
      { CATTLE_TOKEN: "not-a-token-of-this-rancher", CATTLE_CA_CHECKSUM: "0".repeat(64) },
    );
    assert.match(
      r.out,
      /CA strict verification is set to true|Successfully downloaded CA certificate/,
    );
    assert.doesNotMatch(r.out, /does not match given --ca-checksum/);
    assert.match(r.out, /500 received while downloading Rancher connection information/);
    assert.equal(unitState(FIRST, "rancher-system-agent.service").enabled, false);
  });

  it("the installer refuses a checksum of the PEM without its newline", () => {
    const r = install(FIRST, cluster, "--etcd --controlplane", sha256(CA.trimEnd()));
    assert.notEqual(r.status, 0, r.out);
    assert.match(
      r.out,
      /Configured cacerts checksum \([0-9a-f]{64}\) does not match given --ca-checksum/,
    );
    assert.equal(unitState(FIRST, "rancher-system-agent.service").enabled, false);
  });

  it("a first etcd + controlplane node registered alone gets no plan", async () => {
    const r = install(FIRST, cluster, "--etcd --controlplane");
    assert.equal(r.status, 0, r.out);
    assert.equal(unitState(FIRST, "rancher-system-agent.service").active, true);
    const info = connectionInfo(FIRST);
    assert.match(info.kubeConfig, /server: https:\/\/ai-ear\.cn\n/);
    const secret = await planSecret(FIRST);
    assert.equal(secret.metadata.labels["rke.cattle.io/cluster-name"], cluster.name);
    const view = await until(cluster.id, (c) => updated(c)?.status === "Unknown", 10);
    assert.equal(
      updated(view)?.message,
      "waiting for at least one control plane, etcd, and worker node to be registered",
    );
    await sleep(5000);
    assert.equal((await planSecret(FIRST)).data.plan, undefined);
    assert.equal(unitState(FIRST, "rke2-server.service").active, false);
  });

  it("with a worker registered, the init node gets its plan and the control plane waits for the cluster agent, which cannot resolve Rancher (seed 000)", async () => {
    labDns("default");
    const r = install(WORKER, cluster, "--worker");
    assert.equal(r.status, 0, r.out);
    const view = await until(cluster.id, (c) =>
      /waiting for cluster agent to connect/.test(updated(c)?.message ?? ""),
    );
    assert.match(
      updated(view)!.message,
      /^configuring bootstrap node\(s\) custom-[0-9a-f]{12}: waiting for cluster agent to connect$/,
    );
    assert.equal(unitState(FIRST, "rke2-server.service").active, true);
    assert.equal((await planSecret(WORKER)).data.plan, undefined);
    assert.equal(unitState(WORKER, "rke2-agent.service").active, false);
    for (let i = 0; i < 30 && !/lookup ai-ear\.cn: i\/o timeout/.test(clusterAgentLog(FIRST)); i++)
      await sleep(1000);
    assert.match(
      clusterAgentLog(FIRST),
      /Failed to dial steve aggregation server: dial tcp: lookup ai-ear\.cn: i\/o timeout/,
    );
  });

  it("once the cluster DNS answers for Rancher, the agent connects and the worker gets its plan", async () => {
    labDns("stack");
    const view = await until(cluster.id, (c) => c.state === "active");
    assert.equal(updated(view)?.status, "True");
    assert.match(clusterAgentLog(FIRST), /Connected to proxy/);
    assert.ok((await planSecret(WORKER)).data.plan);
    assert.equal(unitState(WORKER, "rke2-agent.service").active, true);
    // Rancher writes RKE2's settings to a drop-in, as JSON (planner.go, 50-rancher.yaml).
    const config = JSON.parse(
      fs.readFileSync(nodeFile(WORKER, "/etc/rancher/rke2/config.yaml.d/50-rancher.yaml"), "utf8"),
    ) as Record<string, string>;
    assert.equal(config.server, "https://192.168.122.31:9345");
  });

  it("a machine registered into an active cluster: the cluster reads active before Rancher has planned it, and the wait waits for the machine", async () => {
    // The node registers again as a new machine (a new cattle-id; its old machine stays, as when
    // a node is re-registered without being removed in Rancher). The stand-in's controllers are
    // held until the wait has looked once, so the window between the registration and Rancher's
    // passes is seen however the passes fall; the hold is lifted at the wait's first line.
    const forget = onNode(
      WORKER,
      "systemctl stop rancher-system-agent; systemctl disable rancher-system-agent; rm -rf /etc/rancher/agent /var/lib/rancher/agent\n",
    );
    assert.equal(forget.status, 0, forget.out);
    const holdFile = path.join(LAB_DIR, "rancher", "controller-hold");
    fs.writeFileSync(holdFile, "");
    try {
      const r = install(WORKER, cluster, "--worker");
      assert.equal(r.status, 0, r.out);
      const right = (await rancher("GET", `/v3/clusters/${cluster.id}`)) as unknown;
      assert.equal(clusterProgress(right).done, true, JSON.stringify(right));
      const log: string[] = [];
      await waitForWorker(cluster, log, () => fs.rmSync(holdFile, { force: true }));
      assert.match(
        log[0],
        /waiting \(0 s of 120 s\): active; n30: Rancher's planner has not planned it yet/,
      );
      assert.match(log[log.length - 1], /active with n30 after \d+ s/);
      // When the wait returned, the machine had applied its plan and the worker ran.
      const secret = await planSecret(WORKER);
      const plan = Buffer.from(secret.data.plan, "base64");
      assert.equal(
        Buffer.from(secret.data["applied-checksum"], "base64").toString(),
        createHash("sha256").update(plan).digest("hex"),
      );
      assert.equal(unitState(WORKER, "rke2-agent.service").active, true);
    } finally {
      fs.rmSync(holdFile, { force: true });
    }
  });

  it("a machine whose plan fails: the wait ends with the failure, naming the machine, within 30 s of it", async () => {
    // The node registers as a new machine whose RKE2 install fails (the installer stand-in fails
    // as a failed download does). Rancher's planner allows no failure (max-failures -1), so the
    // plan counts as failed at the agent's first failed try, and the wait stops there.
    const forget = onNode(
      WORKER,
      "systemctl stop rancher-system-agent; systemctl disable rancher-system-agent; rm -rf /etc/rancher/agent /var/lib/rancher/agent\n" +
        "systemctl stop rke2-agent; systemctl disable rke2-agent; touch /etc/rancher/standin-install-fails\n",
    );
    assert.equal(forget.status, 0, forget.out);
    try {
      const r = install(WORKER, cluster, "--worker");
      assert.equal(r.status, 0, r.out);
      const log: string[] = [];
      let endedAt = 0;
      const error = await waitForWorker(cluster, log).then(
        () => assert.fail(`the wait ended as if the plan had applied: ${log.join("\n")}`),
        (e: Error) => {
          endedAt = Date.now();
          return e;
        },
      );
      assert.match(
        error.message,
        /n30: its agent failed to apply Rancher's plan 1 time\(s\), and the planner allows no failure: Rancher marks the machine's plan as failed and retries no more; see journalctl -u rancher-system-agent/,
      );
      // The agent's record of the failure, in the secret as watcher.go writes it.
      const secret = await planSecret(WORKER);
      const field = (k: string) => Buffer.from(secret.data[k] ?? "", "base64").toString();
      const plan = Buffer.from(secret.data.plan, "base64");
      assert.equal(field("failed-checksum"), createHash("sha256").update(plan).digest("hex"));
      assert.equal(field("max-failures"), "-1");
      const failedAt = Date.parse(field("last-apply-time").replace(" UTC ", " GMT "));
      assert.ok(Number.isFinite(failedAt), field("last-apply-time"));
      const seconds = (endedAt - failedAt) / 1000;
      assert.ok(seconds < 30, `the wait ended ${seconds} s after the plan failed`);
      assert.equal(unitState(WORKER, "rke2-agent.service").active, false);
      // Rancher's own view of the cluster does not say it: a machine that never applied a plan
      // is "waiting for agent to check in" before anything else (store.go
      // getPlanStatusReasonMessage), which is why the wait reads the plan secret.
      await until(cluster.id, (c) =>
        /waiting for agent to check in and apply initial plan/.test(updated(c)?.message ?? ""),
      );
    } finally {
      onNode(WORKER, "rm -f /etc/rancher/standin-install-fails\n");
    }
  });
});

const pulumiUp = () => pulumiAsync(LAB_STACK, ["up", "--yes", "--skip-preview"]);

/** The last lines of the agent's and RKE2's unit logs on a node, for failure messages. */
function unitLogs(octet: number): string {
  return ["rancher-system-agent.service", "rke2-server.service", "rke2-agent.service"]
    .map((unit) => {
      const file = nodeFile(octet, `/var/lib/systemctl-double/units/${unit}/log`);
      const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "(no log)";
      return `--- .${octet} ${unit}:\n${text.split("\n").slice(-15).join("\n")}`;
    })
    .join("\n");
}

async function uat1(): Promise<ClusterView> {
  const list = JSON.parse(
    fs.readFileSync(path.join(LAB_DIR, "rancher", "clusters.json"), "utf8"),
  ) as { id: string; name: string }[];
  const found = list.find((c) => c.name === "uat1");
  assert.ok(found, "Rancher has no cluster uat1");
  return (await rancher("GET", `/v3/clusters/${found.id}`)) as unknown as ClusterView;
}

describe("pulumi up registers uat1 with the Rancher stand-in", function () {
  this.timeout(1200000);

  before(() => {
    for (const node of [FIRST, WORKER]) assert.equal(lab("reset-node", String(node)).status, 0);
  });

  after(() => labDns("stack"));

  it("with the cluster DNS as seed 000 found it, ClusterSync fails naming the cluster agent's DNS lookup, and no process ever shows the token", async () => {
    labDns("default");
    // The wait's length is not what this case checks: a shorter one than the lab stack's 120 s
    // (the agent's DNS lookup is read after half of it), put back when the case ends.
    const stackFile = path.join(REPO, "stacks", `Pulumi.${LAB_STACK}.yaml`);
    const asWritten = fs.readFileSync(stackFile, "utf8");
    const timeoutKey = "rke2-remediation:rancher.downstreamClusters[0].joinGate.timeoutSeconds";
    const set = pulumiOn(LAB_STACK, ["config", "set", "--path", timeoutKey, "40"]);
    assert.equal(set.status, 0, set.out);
    let r: { status: number; out: string };
    let commandLines: Set<string>;
    try {
      const up = pulumiUp();
      commandLines = await sampleCommandLines(up);
      r = await up;
    } finally {
      fs.writeFileSync(stackFile, asWritten);
    }
    assert.match(r.out, /is not active 40 s after its registrations/);
    assert.notEqual(r.status, 0, r.out);
    assert.ok(/waiting for cluster agent to connect/.test(r.out), `${r.out}\n${unitLogs(FIRST)}`);
    assert.match(r.out, /lookup ai-ear\.cn/);
    assert.match(r.out, /i\/o timeout|no such host/);
    const cluster = await uat1();
    const token = cluster.registrationToken.token;
    assert.ok(!r.out.includes(token), "the registration token is in pulumi's output");
    assert.ok(!r.out.includes(token.slice(0, token.length / 2)), "half the token is in the output");
    // No 8 characters of either token anywhere in what the product printed or wrote: pulumi's
    // output and errors, and the stack's state (its secrets are ciphertext there).
    // (An API token is `<name>:<secret>`; its name is public, as Rancher shows it.)
    const apiSecret = API_TOKEN.slice(API_TOKEN.indexOf(":") + 1);
    const state = fs
      .readdirSync(path.join(LAB_DIR, "state"), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".json"))
      .map((f) => fs.readFileSync(path.join(LAB_DIR, "state", f), "utf8"))
      .join("\n");
    for (const [what, text] of [
      ["pulumi's output", r.out],
      ["the stack's state", state],
    ] as const) {
      assert.equal(sliceOf([token, apiSecret], text), undefined, `a token's slice is in ${what}`);
    }
    // Seed 000's symptom: the worker registered but got no plan.
    assert.equal(unitState(WORKER, "rancher-system-agent.service").active, true);
    assert.equal(unitState(WORKER, "rke2-agent.service").active, false);
    // The installer ran while we sampled: its shell read the script from stdin.
    assert.ok(
      [...commandLines].some((c) => /^(ba)?sh -s\b/.test(c)),
      "never saw the installer's shell",
    );
    // rancher/system-agent@v0.14.0:install.sh passes the token to one curl of
    // /v3/connect/agent in a -H argument; nothing else may show it.
    assert.deepEqual(commandLineLeaks(commandLines, [token, apiSecret]), []);
  });

  it("pulumi up --stack local provisions uat1 once the cluster DNS answers for Rancher", async () => {
    labDns("stack");
    const r = await pulumiUp();
    assert.equal(r.status, 0, `${r.out}\n${unitLogs(FIRST)}\n${unitLogs(WORKER)}`);
    const cluster = await uat1();
    assert.equal(cluster.state, "active");
    assert.equal(updated(cluster)?.status, "True");
    assert.equal(unitState(FIRST, "rke2-server.service").active, true);
    assert.equal(unitState(WORKER, "rke2-agent.service").active, true);
    const members = inNamespace(labNs(`n${FIRST}`), [
      "etcdctl",
      "--endpoints",
      "http://127.0.0.1:2379",
      "member",
      "list",
    ]);
    assert.match(
      members.stdout,
      /sza122031\.local-[0-9a-f]{8}, http:\/\/192\.168\.122\.31:2380, .*, false/,
    );
    // Each machine registered with the label Rancher's node command carries.
    const registered = (
      JSON.parse(fs.readFileSync(path.join(LAB_DIR, "rancher", "clusters.json"), "utf8")) as {
        name: string;
        machines: { nodeName: string; labels?: string }[];
      }[]
    ).find((c) => c.name === "uat1");
    assert.ok(registered && registered.machines.length >= 2);
    for (const m of registered.machines) {
      assert.equal(m.labels, "cattle.io/os=linux", m.nodeName);
    }
  });
});
