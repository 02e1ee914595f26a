/**
 * The join order and gate against real etcd (Debian's etcd-server) in lab nodes .30 and .31,
 * which the e2e stack does not join: the learner limit, the gate waiting for promotion, the
 * gate's timeout report, and the stale-db rule of the start script.
 */
import * as assert from "assert/strict";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import { runScript } from "../../components/ssh/run-script";
import { inNamespace, lab, LAB_DIR, labNs, nodeConnection, nodeFile, REPO, unitState } from "./lab";

const RKE2 = path.join(__dirname, "../../components/rke2-cluster");
const startScript = componentFile(RKE2, "rke2-start.sh");
const gateScript = componentFile(RKE2, "join-gate.sh");
const membersScript = componentFile(RKE2, "etcd-members.sh");
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
      node.name,
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

/** A member's line in `member list`, found by its peer URL (an unstarted learner has no name). */
const memberLine = (ip: string) =>
  etcdctl("member", "list")
    .stdout.split("\n")
    .find((l) => l.includes(`http://${ip}:2380`));

function writeConfig(node: typeof A, server?: string) {
  const file = nodeFile(node.octet, "/etc/rancher/rke2/config.yaml");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(
    file,
    `${server ? `server: https://${server}:9345\n` : ""}node-name: ${node.name}\nnode-ip: ${node.ip}\n`,
  );
}

/** An installer that only registers the unit: the rule under test is the script's, not RKE2's. */
const UNIT_ONLY_INSTALL = "mkdir -p /var/lib/systemctl-double/units/rke2-server.service";

async function start(node: typeof A, membership: string) {
  return runScript(nodeConnection(node.octet), startScript, {
    params: {
      ROLE: "server",
      VERSION: "v1.35.6+rke2r1",
      INSTALL_COMMAND: UNIT_ONLY_INSTALL,
      MEMBERSHIP: membership,
    },
  });
}

describe("RKE2 join against real etcd", function () {
  this.timeout(180000);
  const processes: ChildProcess[] = [];

  before(() => {
    for (const node of [A, B]) assert.equal(lab("reset-node", String(node.octet)).status, 0);
  });

  after(() => {
    for (const p of processes) p.kill();
    for (const node of [A, B])
      inNamespace(labNs(`n${node.octet}`), ["pkill", "-f", `etcd --name ${node.name}`]);
  });

  describe("the stale-db rule of the start script", () => {
    const db = nodeFile(B.octet, "/var/lib/rancher/rke2/server/db");
    beforeEach(() => {
      writeConfig(B, A.ip);
      fs.mkdirSync(db, { recursive: true });
      fs.writeFileSync(path.join(db, "marker"), "etcd data of an earlier attempt");
    });
    afterEach(async () => {
      await runScript(nodeConnection(B.octet), "systemctl stop rke2-server.service || true");
    });

    it("removes the etcd data of a server that is not a member before starting it", async () => {
      const r = await start(B, "none");
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(
        r.stderr,
        /removed \/var\/lib\/rancher\/rke2\/server\/db of a server that is not an etcd member/,
      );
      assert.ok(!fs.existsSync(path.join(db, "marker")));
    });

    it("never touches a member's etcd data", async () => {
      const r = await start(B, "learner");
      assert.equal(r.exitCode, 0, r.stderr);
      assert.ok(fs.existsSync(path.join(db, "marker")));
    });

    it("leaves a running voting member alone: no restart", async () => {
      await start(B, "learner");
      const before = unitState(B.octet, "rke2-server.service").history.length;
      const r = await start(B, "voter");
      assert.match(r.stderr, /voting etcd member; left as it is/);
      assert.equal(unitState(B.octet, "rke2-server.service").history.length, before);
    });
  });

  describe("learners and the join gate", () => {
    before(async () => {
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
      // Node A: the stand-in kubectl and a config naming it, as an installed first server has.
      writeConfig(A);
      const installed = await runScript(nodeConnection(A.octet), `${INSTALL}`);
      assert.equal(installed.exitCode, 0, installed.stderr);
      processes.push(
        startEtcd(A, [
          "--initial-cluster",
          `${A.name}=http://${A.ip}:2380`,
          "--initial-cluster-state",
          "new",
        ]),
      );
      await until("etcd on .30", () => etcdctl("endpoint", "health").status === 0);
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
        B.name,
        "--learner",
        "--peer-urls",
        `http://${B.ip}:2380`,
      );
      assert.equal(added.status, 0, added.stderr);
      processes.push(
        startEtcd(B, [
          "--initial-cluster",
          `${A.name}=http://${A.ip}:2380,${B.name}=http://${B.ip}:2380`,
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
          /error: join gate for sza122030\.local timed out after \d+s; missing: no learner in etcd; member list: .*http:\/\/192\.168\.122\.43:2380, , true/,
        );
        assert.match(r.stderr, /conditions: .*EtcdIsVoter/);
      } finally {
        const line = memberLine("192.168.122.43");
        if (line) etcdctl("member", "remove", line.split(",")[0]);
      }
    });
  });
});
