/**
 * The join order and gate against real etcd (Debian's etcd-server) in lab nodes .30 and .31,
 * which the e2e stack does not join: the node step's etcd data rules (through the RKE2 stand-in,
 * whose etcd is real), the learner limit, the gate waiting for promotion and its timeout report.
 */
import * as assert from "assert/strict";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import * as crypto from "crypto";
import { desiredManagedKeys } from "../../components/rke2-cluster/config-adoption";
import { membershipOf, parseMemberList } from "../../components/rke2-cluster/etcd-members";
import { NodeStartInputs, startOnNode } from "../../components/rke2-cluster/provider";
import type { SshEndpoint } from "../../components/model";
import { pinnedEndpoint, runScript } from "../../components/ssh/run-script";
import {
  inNamespace,
  lab,
  LAB_DIR,
  labNs,
  nodeConnection,
  nodeFile,
  operatorKey,
  REPO,
  run,
  unitState,
} from "./lab";

const RKE2 = path.join(__dirname, "../../components/rke2-cluster");
const startScript = componentFile(RKE2, "rke2-start.sh");
const gateScript = componentFile(RKE2, "join-gate.sh");
const membersScript = componentFile(RKE2, "etcd-members.sh");
const factsScript = componentFile(RKE2, "rke2-facts.sh");
const INSTALL = `bash ${path.join(REPO, "test", "lab", "rke2-standin", "install.sh")}`;

const A = { octet: 30, name: "sza122030.local", ip: "192.168.122.30" };
const B = { octet: 31, name: "sza122031.local", ip: "192.168.122.31" };

function etcdctl(...args: string[]) {
  return inNamespace(labNs(`n${A.octet}`), [
    "etcdctl",
    "--endpoints",
    `http://${A.ip}:2379`,
    ...args,
  ]);
}

/** As RKE2 names etcd members: <node-name>-<8 hex>. */
const memberName = (node: typeof A) => `${node.name}-0000${node.octet}aa`;

function startEtcd(node: typeof A, extra: string[]): ChildProcess {
  const data = fs.mkdtempSync(path.join(LAB_DIR, `etcd-${node.octet}-`));
  const peer = `http://${node.ip}:2380`;
  return spawn(
    "ip",
    [
      "netns",
      "exec",
      labNs(`n${node.octet}`),
      "etcd",
      "--name",
      memberName(node),
      "--data-dir",
      data,
      "--listen-client-urls",
      `http://${node.ip}:2379,http://127.0.0.1:2379`,
      "--advertise-client-urls",
      `http://${node.ip}:2379`,
      "--listen-peer-urls",
      peer,
      "--initial-advertise-peer-urls",
      peer,
      ...extra,
    ],
    { stdio: "ignore" },
  );
}

async function until(what: string, check: () => boolean, ms = 30000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The real kubectl on node A with the kubeconfig RKE2's stand-in wrote there (stdout, trimmed). */
function kubectlOnA(...args: string[]): string {
  const r = inNamespace(labNs(`n${A.octet}`), [
    "nsenter",
    "--target",
    fs.readFileSync(path.join(LAB_DIR, "nodes", `n${A.octet}`, "sshd.pid"), "utf8").trim(),
    "--mount",
    nodeFile(A.octet, "/var/lib/rancher/rke2/bin/kubectl"),
    "--kubeconfig",
    "/etc/rancher/rke2/rke2.yaml",
    "--request-timeout=5s",
    ...args,
  ]);
  return r.status === 0 ? r.stdout.trim() : "";
}

/** A member's line in `member list`, found by its peer URL (an unstarted learner has no name). */
const memberLine = (ip: string) =>
  etcdctl("member", "list")
    .stdout.split("\n")
    .find((l) => l.includes(`http://${ip}:2380`));

/** The cluster's token in the hand-written files: RKE2 refuses a joining server without one. */
const CLUSTER_TOKEN = "lab-etcd-join-token";

/** Writes a node's config.yaml by hand and returns it: the stack then asks for the same keys. */
function writeConfig(node: typeof A, server?: string): string {
  const file = nodeFile(node.octet, "/etc/rancher/rke2/config.yaml");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const text = `${server ? `server: https://${server}:9345\n` : ""}token: ${CLUSTER_TOKEN}\nnode-name: ${node.name}\nnode-ip: ${node.ip}\n`;
  fs.writeFileSync(file, text);
  return text;
}

/** The inputs of a node step for a lab node, as the component builds them. */
function stepInputs(
  node: typeof A,
  config: string,
  place: { joinsThrough?: typeof A; peers?: (typeof A)[] },
  members = membersScript,
): NodeStartInputs {
  const target = (n: typeof A): SshEndpoint => pinnedEndpoint(nodeConnection(n.octet));
  return {
    node: node.name,
    nodeIp: node.ip,
    role: "server",
    connection: target(node),
    sshPrivateKey: operatorKey(),
    script: startScript,
    factsScript,
    membersScript: members,
    version: "v1.35.7+rke2r1",
    installCommand: INSTALL,
    config,
    managedKeys: desiredManagedKeys(config),
    joinsThrough: place.joinsThrough && {
      node: place.joinsThrough.name,
      connection: target(place.joinsThrough),
    },
    peers: place.peers?.map((p) => ({ node: p.name, connection: target(p) })),
  };
}

/** Every file under a directory with its content: what "keeps every byte" compares. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile())
        out[path.relative(dir, p)] = crypto
          .createHash("sha256")
          .update(fs.readFileSync(p))
          .digest("hex");
    }
  };
  walk(dir);
  return out;
}

const dbOf = (node: typeof A) => nodeFile(node.octet, "/var/lib/rancher/rke2/server/db");

async function stopRke2(node: typeof A) {
  await runScript(nodeConnection(node.octet), "systemctl stop rke2-server.service || true");
}

describe("RKE2 join against real etcd", function () {
  this.timeout(180000);
  const processes: ChildProcess[] = [];

  before(async () => {
    for (const node of [A, B]) assert.equal(lab("reset-node", String(node.octet)).status, 0);
    // Prepared nodes: with Rocky's REJECT rules a learner never syncs over 2380 (seed 003).
    const prepare = componentFile(
      path.join(__dirname, "../../components/node-preparation"),
      "prepare-node.sh",
    );
    for (const node of [A, B]) {
      const r = await runScript(nodeConnection(node.octet), prepare, {
        params: {
          ACTION: "apply",
          NM_CONFIG: "[keyfile]\nunmanaged-devices=interface-name:kube-ipvs0",
          BRING_UP_KUBE_IPVS: "false",
        },
      });
      assert.equal(r.exitCode, 0, r.stderr);
    }
  });

  after(() => {
    for (const p of processes) p.kill();
    // Only this lab's processes: pkill would match the same node names in every lab on the
    // machine (the pid namespace is shared), and stop another lab's etcd.
    for (const node of [A, B]) {
      const pids = run("ip", ["netns", "pids", labNs(`n${node.octet}`)]).stdout.split(/\s+/);
      for (const pid of pids.filter(Boolean)) {
        let argv = "";
        try {
          argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
        } catch {
          continue;
        }
        if (argv.includes(`etcd --name ${node.name}`)) run("kill", [pid]);
      }
    }
  });

  describe("etcd data is never lost (node step against the RKE2 stand-in's real etcd)", () => {
    // .30's etcd runs throughout, so its files are compared by name: none may go.
    let aData: string[];
    const aFiles = () => Object.keys(snapshot(dbOf(A))).sort();
    before(async () => {
      for (const node of [A, B]) {
        await stopRke2(node);
        fs.rmSync(path.dirname(dbOf(node)), { recursive: true, force: true });
      }
      // .30 starts a cluster: it is the first server and nobody else holds etcd data.
      const state = await startOnNode("create", stepInputs(A, writeConfig(A), { peers: [B] }));
      assert.deepEqual([state.active, state.installedVersion], [true, "v1.35.7+rke2r1"]);
      await until("etcd on .30", () => etcdctl("endpoint", "health").status === 0);
      aData = aFiles();
    });
    after(async () => {
      for (const node of [A, B]) await stopRke2(node);
      for (const node of [A, B])
        fs.rmSync(path.dirname(dbOf(node)), { recursive: true, force: true });
    });

    it("names members as RKE2 does, <node-name>-<8 hex>", () => {
      const list = parseMemberList(etcdctl("member", "list", "-w", "json").stdout, A.name);
      assert.match(list.members[0].name, /^sza122030\.local-[0-9a-f]{8}$/);
    });

    it("refuses to bootstrap a server listed first while another server holds etcd data", async () => {
      // .31 listed first without data (rebuilt, or a new host put first in `nodes`).
      await assert.rejects(
        startOnNode("create", stepInputs(B, writeConfig(B), { peers: [A] })),
        /sza122031\.local is listed first and holds no etcd data.*sza122030\.local already holds etcd data\. Nothing was changed\. List sza122030\.local first/,
      );
      assert.equal(unitState(B.octet, "rke2-server.service").active, false);
      assert.deepEqual(aFiles(), aData);
    });

    // What .30's etcd answers; on .31 (whose etcd is down) the script fails as etcdctl would.
    const onFirstOnly = (answer: string) =>
      `grep -q 'node-ip: ${A.ip}' /etc/rancher/rke2/config.yaml || exit 1\n${answer}\n`;
    const unreadable: [string, string][] = [
      ["an empty member list", onFirstOnly("true")],
      ["a garbled member list", onFirstOnly("echo '{\"header\":'")],
      ["the table output", onFirstOnly("etcdctl --endpoints http://127.0.0.1:2379 member list")],
    ];
    for (const [what, script] of unreadable) {
      it(`stops with the host named on ${what}, touching no data`, async () => {
        fs.mkdirSync(path.join(dbOf(B), "etcd", "member"), { recursive: true });
        fs.writeFileSync(path.join(dbOf(B), "etcd", "member", "marker"), "stale");
        try {
          const before = snapshot(dbOf(B));
          await assert.rejects(
            startOnNode("create", stepInputs(B, writeConfig(B, A.ip), { joinsThrough: A }, script)),
            /cannot read etcd's member list on sza122030\.local: .*Nothing was changed/,
          );
          assert.deepEqual(snapshot(dbOf(B)), before);
          assert.deepEqual(aFiles(), aData);
        } finally {
          fs.rmSync(dbOf(B), { recursive: true, force: true });
        }
      });
    }

    it("on update, refuses to touch a joining server's data that the cluster does not list", async () => {
      fs.mkdirSync(path.join(dbOf(B), "etcd", "member"), { recursive: true });
      fs.writeFileSync(path.join(dbOf(B), "etcd", "member", "marker"), "stale");
      // An earlier attempt's member name, as RKE2 kept it: no member of .30's cluster has it.
      fs.writeFileSync(path.join(dbOf(B), "etcd", "name"), `${B.name}-0badc0de`);
      const inputs = stepInputs(B, writeConfig(B, A.ip), { joinsThrough: A });
      const before = snapshot(dbOf(B));
      await assert.rejects(
        startOnNode("update", inputs, {
          ...inputs,
          installedVersion: "none",
          active: false,
          membership: "none",
          restartPending: "",
          hostNodeName: B.name,
          dataDir: "/var/lib/rancher/rke2",
          startedAt: "",
          lastChanges: [],
        }),
        /sza122031\.local holds etcd data .* Nothing was changed: etcd data is moved aside only when a joining server is first created/,
      );
      assert.deepEqual(snapshot(dbOf(B)), before);
    });

    it("moves a never-joined server's stale data aside on create, and it joins", async () => {
      // The marker is still in .31's db from the previous case: data of an earlier attempt.
      const state = await startOnNode(
        "create",
        stepInputs(B, writeConfig(B, A.ip), { joinsThrough: A }),
      );
      assert.match(
        state.lastChanges.join("\n"),
        /moved etcd data .* from \/var\/lib\/rancher\/rke2\/server\/db to \/var\/lib\/rancher\/rke2\/server\/db\.stale-\d{8}T\d{6}Z/,
      );
      const aside = fs
        .readdirSync(path.dirname(dbOf(B)))
        .filter((d) => /^db\.stale-\d{8}T\d{6}Z$/.test(d));
      assert.equal(aside.length, 1);
      assert.equal(
        fs.readFileSync(
          path.join(path.dirname(dbOf(B)), aside[0], "etcd", "member", "marker"),
          "utf8",
        ),
        "stale",
      );
      await until(
        ".31 to be a voting member",
        () =>
          membershipOf(
            parseMemberList(etcdctl("member", "list", "-w", "json").stdout, A.name),
            B.name,
            B.ip,
          ) === "voter",
        90000,
      );
    });

    it("adopts a running voter without a restart, and read reports it as found", async () => {
      const inputs = stepInputs(B, writeConfig(B, A.ip), { joinsThrough: A });
      const before = unitState(B.octet, "rke2-server.service").history.length;
      const state = await startOnNode("create", inputs);
      assert.equal(unitState(B.octet, "rke2-server.service").history.length, before);
      assert.deepEqual(
        [state.active, state.membership, state.installedVersion],
        [true, "voter", "v1.35.7+rke2r1"],
      );
    });
  });

  describe("learners and the join gate", () => {
    const controlPlanePid = "/run/rke2-standin-control-plane.pid";
    before(async function () {
      this.timeout(240000);
      // Node A: the real kubectl and a config naming it, as an installed first server has.
      writeConfig(A);
      const installed = await runScript(
        nodeConnection(A.octet),
        `INSTALL_RKE2_VERSION=v1.35.7+rke2r1 ${INSTALL}`,
      );
      assert.equal(installed.exitCode, 0, installed.stderr);
      processes.push(
        startEtcd(A, [
          "--initial-cluster",
          `${memberName(A)}=http://${A.ip}:2380`,
          "--initial-cluster-state",
          "new",
        ]),
      );
      await until("etcd on .30", () => etcdctl("endpoint", "health").status === 0);
      // The real kube-apiserver on that etcd, the Node and its conditions (RKE2's stand-in
      // control plane; .30 is not a management server, so the lab does not start one there).
      const bin = fs.readFileSync(path.join(LAB_DIR, "toolchain.path"), "utf8").trim();
      const standin = path.join(REPO, "test", "lab", "rke2-standin", "control-plane");
      const started = await runScript(
        nodeConnection(A.octet),
        `mkdir -p /var/lib/rancher/rke2/server/logs
STANDIN_KUBE_DIR=${path.join(LAB_DIR, "kube")} STANDIN_BIN=${bin} setsid ${standin} ${A.name} ${A.ip} ${memberName(A)} \
  >>/var/lib/rancher/rke2/server/logs/control-plane.log 2>&1 </dev/null &
echo $! >${controlPlanePid}`,
      );
      assert.equal(started.exitCode, 0, started.stderr);
      await until(
        "the real apiserver's /readyz and the Node of .30 with EtcdIsVoter=True",
        () =>
          kubectlOnA("get", "--raw", "/readyz") === "ok" &&
          kubectlOnA(
            "get",
            "node",
            A.name,
            "-o",
            'jsonpath={.status.conditions[?(@.type=="EtcdIsVoter")].status}',
          ) === "True",
        180000,
      );
    });
    after(async () => {
      await runScript(
        nodeConnection(A.octet),
        `[ -f ${controlPlanePid} ] && kill -- -"$(cat ${controlPlanePid})"; rm -f ${controlPlanePid}; true`,
      );
    });

    it("the real apiserver reports readyz and the Node's Ready and EtcdIsVoter conditions as RKE2 does", () => {
      assert.equal(kubectlOnA("get", "--raw", "/readyz"), "ok");
      const node = JSON.parse(kubectlOnA("get", "node", A.name, "-o", "json")) as {
        metadata: { annotations: Record<string, string>; labels: Record<string, string> };
        status: { conditions: { type: string; status: string; reason: string }[] };
      };
      assert.equal(node.metadata.annotations["etcd.rke2.cattle.io/node-name"], memberName(A));
      assert.equal(node.metadata.labels["node-role.kubernetes.io/etcd"], "true");
      const byType = new Map(node.status.conditions.map((c) => [c.type, c]));
      assert.deepEqual(
        [
          byType.get("Ready")?.status,
          byType.get("EtcdIsVoter")?.status,
          byType.get("EtcdIsVoter")?.reason,
        ],
        ["True", "True", "MemberNotLearner"],
      );
    });

    it("etcd refuses a second learner while one exists: 'too many learner members in cluster'", () => {
      // One after the other, as a second server's join arrives while the first is still a
      // learner. (Two adds racing each other can both pass etcd's pre-check; the loser then
      // times out instead of naming the limit, which makes the message nondeterministic.)
      const add = (n: string) =>
        etcdctl(
          "--command-timeout=20s",
          "member",
          "add",
          n,
          "--learner",
          "--peer-urls",
          `http://192.168.122.${n === "x" ? 41 : 42}:2380`,
        );
      const first = add("x");
      assert.equal(first.status, 0, first.stderr);
      const second = add("y");
      assert.notEqual(second.status, 0, second.stdout);
      assert.match(second.stderr, /too many learner members in cluster/);
      for (const n of ["x", "y"]) {
        const line = memberLine(`192.168.122.${n === "x" ? 41 : 42}`);
        if (line) etcdctl("member", "remove", line.split(",")[0]);
      }
    });

    it("the gate waits while a learner exists and passes once it is promoted", async () => {
      const added = etcdctl(
        "member",
        "add",
        memberName(B),
        "--learner",
        "--peer-urls",
        `http://${B.ip}:2380`,
      );
      assert.equal(added.status, 0, added.stderr);
      processes.push(
        startEtcd(B, [
          "--initial-cluster",
          `${memberName(A)}=http://${A.ip}:2380,${memberName(B)}=http://${B.ip}:2380`,
          "--initial-cluster-state",
          "existing",
        ]),
      );
      const progress: string[] = [];
      let passedAt = 0;
      const gate = runScript(nodeConnection(A.octet), gateScript, {
        params: {
          NODE_NAME: A.name,
          TIMEOUT_SECONDS: "90",
          POLL_SECONDS: "1",
          MEMBERS_SCRIPT: membersScript,
        },
        onProgress: (l) => progress.push(l),
      }).then((r) => {
        passedAt = Date.now();
        return r;
      });
      await until("the gate to report the learner", () =>
        progress.some((l) => /missing no learner in etcd/.test(l)),
      );
      assert.equal(passedAt, 0, "the gate passed while a learner existed");
      const learner = memberLine(B.ip);
      assert.ok(
        learner,
        `no member with peer ${B.ip}: ${JSON.stringify(etcdctl("member", "list"))}`,
      );
      const id = learner.split(",")[0];
      await until(
        "the learner to be promotable",
        () => etcdctl("member", "promote", id).status === 0,
        60000,
      );
      const promotedAt = Date.now();
      const result = await gate;
      assert.equal(result.exitCode, 0, result.stderr);
      // Passing needs one more poll (1 s) plus the checks themselves.
      assert.ok(
        passedAt - promotedAt < 5000,
        `the gate passed ${passedAt - promotedAt} ms after promotion`,
      );
    });

    it("the gate times out with the member list when promotion never comes", async () => {
      // etcd refuses reconfiguration until every member has been active for a while ("unhealthy cluster").
      await until(
        "etcd to accept a new learner",
        () =>
          etcdctl(
            "member",
            "add",
            "never-started",
            "--learner",
            "--peer-urls",
            "http://192.168.122.43:2380",
          ).status === 0,
      );
      try {
        const r = await runScript(nodeConnection(A.octet), gateScript, {
          params: {
            NODE_NAME: A.name,
            TIMEOUT_SECONDS: "3",
            POLL_SECONDS: "1",
            MEMBERS_SCRIPT: membersScript,
          },
        });
        assert.equal(r.exitCode, 1);
        assert.match(
          r.stderr,
          /error: join gate for sza122030\.local timed out after \d+s; missing: no learner in etcd; member list: .*"peerURLs":\["http:\/\/192\.168\.122\.43:2380"\],"isLearner":true/,
        );
        assert.match(r.stderr, /conditions: .*EtcdIsVoter/);
      } finally {
        const line = memberLine("192.168.122.43");
        if (line) etcdctl("member", "remove", line.split(",")[0]);
      }
    });
  });
});
