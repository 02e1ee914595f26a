/**
 * The join order and gate against real etcd (Debian's etcd-server) in lab nodes .30 and .31,
 * which the e2e stack does not join, through the RKE2 stand-in (whose etcd is real): the node
 * step's etcd data rules, the learner limit, the leader's promotion of a learner and its eviction
 * of a stalled one, the gate waiting for that promotion, its timeout report, and its refusal of a
 * server that started an etcd cluster of its own.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import * as crypto from "crypto";
import { desiredManagedKeys } from "../../components/rke2-cluster/config-adoption";
import { desiredRegistryEntries } from "../../components/rke2-cluster/registries";
import * as YAML from "yaml";
import { membershipOf, parseMemberList } from "../../components/rke2-cluster/etcd-members";
import {
  firstServerClusterId,
  FirstServerRef,
  JoinGateState,
  joinGateProvider,
  NodeStartInputs,
  startOnNode,
} from "../../components/rke2-cluster/provider";
import type { SshEndpoint } from "../../components/model";
import { pinnedEndpoint, runScript } from "../../components/ssh/run-script";
import {
  inNamespace,
  lab,
  LAB_DIR,
  labNs,
  nodeConnection,
  nodeFile,
  REPO,
  run,
  stepKey,
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

/** etcdctl against a node's etcd (plain HTTP in the lab), from inside that node's namespace. */
function etcdctlAt(node: typeof A, ...args: string[]) {
  return inNamespace(labNs(`n${node.octet}`), [
    "etcdctl",
    "--endpoints",
    `http://${node.ip}:2379`,
    ...args,
  ]);
}
const etcdctl = (...args: string[]) => etcdctlAt(A, ...args);

async function until(what: string, check: () => boolean, ms = 30000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const standinEnvFile = (node: typeof A) => nodeFile(node.octet, "/etc/rke2-standin.env");

/**
 * Stops RKE2's stand-in on A and B and removes their etcd data (and, with `clearConfig`, their
 * /etc/rancher/rke2), then adds `env` to each stand-in's environment file. Returns what puts
 * them back: RKE2 stopped, its data removed, each environment file as it was.
 */
async function freshStandins(env: string, clearConfig = false): Promise<() => Promise<void>> {
  const saved = new Map<number, string>();
  for (const node of [A, B]) {
    await stopRke2(node);
    fs.rmSync(path.dirname(dbOf(node)), { recursive: true, force: true });
    if (clearConfig)
      fs.rmSync(nodeFile(node.octet, "/etc/rancher/rke2"), { recursive: true, force: true });
    saved.set(node.octet, fs.readFileSync(standinEnvFile(node), "utf8"));
    fs.appendFileSync(standinEnvFile(node), env);
  }
  return async () => {
    for (const node of [A, B]) {
      await stopRke2(node);
      fs.rmSync(path.dirname(dbOf(node)), { recursive: true, force: true });
      fs.writeFileSync(standinEnvFile(node), saved.get(node.octet)!);
    }
  };
}

/** The real kubectl on a node with the kubeconfig RKE2's stand-in wrote there (stdout, trimmed). */
function kubectlOn(node: typeof A, ...args: string[]): string {
  const r = inNamespace(labNs(`n${node.octet}`), [
    "nsenter",
    "--target",
    fs.readFileSync(path.join(LAB_DIR, "nodes", `n${node.octet}`, "sshd.pid"), "utf8").trim(),
    "--mount",
    nodeFile(node.octet, "/var/lib/rancher/rke2/bin/kubectl"),
    "--kubeconfig",
    "/etc/rancher/rke2/rke2.yaml",
    "--request-timeout=5s",
    ...args,
  ]);
  return r.status === 0 ? r.stdout.trim() : "";
}

/** A Node's EtcdIsVoter condition, as node's own apiserver has it ("" when none). */
const etcdIsVoter = (on: typeof A, node: typeof A, field = "status") =>
  kubectlOn(
    on,
    "get",
    "node",
    node.name,
    "-o",
    `jsonpath={.status.conditions[?(@.type=="EtcdIsVoter")].${field}}`,
  );

/** The pid of the etcd controller loop RKE2's stand-in runs on a node (manage-learners; not the
 * subshells a pass forks, whose parent is the loop). */
function learnerLoopOf(node: typeof A): number {
  const isLoop = (pid: string) => {
    try {
      return fs
        .readFileSync(`/proc/${pid}/cmdline`, "utf8")
        .includes("rke2-standin/manage-learners");
    } catch {
      return false;
    }
  };
  const parentOf = (pid: string) => {
    try {
      return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1];
    } catch {
      return "";
    }
  };
  const pids = run("ip", ["netns", "pids", labNs(`n${node.octet}`)]).stdout.split(/\s+/);
  const loops = pids.filter((pid) => pid && isLoop(pid) && !isLoop(parentOf(pid)));
  assert.equal(loops.length, 1, `manage-learners processes on .${node.octet}: ${loops}`);
  return Number(loops[0]);
}

/** What RKE2's stand-in logged on a node (the systemctl double's log of rke2-server.service). */
const rke2Log = (node: typeof A) =>
  fs.readFileSync(
    nodeFile(node.octet, "/var/lib/systemctl-double/units/rke2-server.service/log"),
    "utf8",
  );

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
    ...stepKey(),
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

  // RKE2's stand-in stops with its unit (etcd, the control plane and the etcd controller loop).
  after(async () => {
    for (const node of [A, B]) await stopRke2(node);
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

    it("the members script on a server whose etcd does not run says so, naming the client port, instead of waiting out etcdctl", async () => {
      const r = await runScript(nodeConnection(B.octet), membersScript, { params: {} });
      assert.equal(r.exitCode, 3, r.stderr);
      assert.match(r.stderr, /nothing listens on 127\.0\.0\.1:2379, etcd's client port/);
      // On .30, whose etcd runs, the same script reads the list.
      const a = await runScript(nodeConnection(A.octet), membersScript, { params: {} });
      assert.equal(a.exitCode, 0, a.stderr);
      assert.equal(parseMemberList(a.stdout, A.name).members.length, 1);
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

    describe("registries.yaml on a server built by hand, where a drop-in moves it", () => {
      const OPS = "/etc/rancher/rke2/ops-registries.yaml";
      const OPS_TEXT =
        '# the operators\' mirror\nmirrors:\n  docker.io:\n    endpoint: ["https://mirror.ops.example"]\n';
      const wanted = JSON.stringify({
        spec: {
          mirrors: { "192.168.122.156:30000": { endpoint: ["http://192.168.122.156:30000"] } },
          configs: {},
        },
        auth: {},
      });
      const withRegistries = () => ({
        ...stepInputs(B, writeConfig(B, A.ip), { joinsThrough: A }),
        registries: wanted,
        managedRegistries: desiredRegistryEntries(JSON.parse(wanted)),
      });
      let configBefore: string;
      before(() => {
        // RKE2 reads private-registry from the drop-in, after config.yaml (k3s configfilearg).
        const dropIn = nodeFile(B.octet, "/etc/rancher/rke2/config.yaml.d/50-registry.yaml");
        fs.mkdirSync(path.dirname(dropIn), { recursive: true });
        fs.writeFileSync(dropIn, `private-registry: ${OPS}\n`);
        fs.writeFileSync(nodeFile(B.octet, OPS), OPS_TEXT);
        configBefore = fs.readFileSync(nodeFile(B.octet, "/etc/rancher/rke2/config.yaml"), "utf8");
      });

      it("adopts the running server as found: reads the drop-in's file, writes nothing, restarts nothing", async () => {
        const before = unitState(B.octet, "rke2-server.service").history.length;
        const state = await startOnNode("create", withRegistries());
        assert.equal(unitState(B.octet, "rke2-server.service").history.length, before);
        assert.equal(fs.readFileSync(nodeFile(B.octet, OPS), "utf8"), OPS_TEXT);
        assert.ok(!fs.existsSync(nodeFile(B.octet, "/etc/rancher/rke2/registries.yaml")));
        assert.deepEqual(state.managedRegistries, { "mirrors/192.168.122.156:30000": "(not set)" });
      });

      it("the next update writes that file, keeping the operators' entry and config.yaml, and restarts once", async () => {
        const before = unitState(B.octet, "rke2-server.service").history.length;
        const state = await startOnNode("update", withRegistries());
        assert.equal(unitState(B.octet, "rke2-server.service").history.length, before + 1);
        const written = fs.readFileSync(nodeFile(B.octet, OPS), "utf8");
        assert.match(written, /# the operators' mirror/);
        assert.deepEqual(YAML.parse(written).mirrors, {
          "docker.io": { endpoint: ["https://mirror.ops.example"] },
          "192.168.122.156:30000": { endpoint: ["http://192.168.122.156:30000"] },
        });
        assert.equal(
          fs.readFileSync(nodeFile(B.octet, "/etc/rancher/rke2/config.yaml"), "utf8"),
          configBefore,
        );
        assert.ok(!fs.existsSync(nodeFile(B.octet, "/etc/rancher/rke2/registries.yaml")));
        assert.deepEqual(state.managedRegistries, withRegistries().managedRegistries);
        // The restart returns once the unit is started; the new process logs what it read as it
        // starts, so its line may come a moment after.
        const used = `Using private registry config file at ${OPS}`;
        await until(`.${B.octet} logging "${used}"`, () => rke2Log(B).includes(used));
      });
    });
  });

  describe("learners: the leader promotes and evicts them, the gate waits for it", () => {
    // Both nodes run RKE2's stand-in as management servers do (the real kube-apiserver, the Node
    // and its conditions), with the etcd controller's tick and stall limit shortened.
    const TICK = 3;
    const STALL = 20;
    let restoreStandins = async () => {};
    const target = (n: typeof A): SshEndpoint => pinnedEndpoint(nodeConnection(n.octet));
    const firstServer: FirstServerRef = { node: A.name, connection: target(A) };
    const gateState = (node: typeof A, first?: FirstServerRef): JoinGateState => ({
      node: node.name,
      connection: target(node),
      ...stepKey(),
      script: gateScript,
      membersScript,
      timeoutSeconds: 120,
      pollSeconds: 1,
      dataDir: "/var/lib/rancher/rke2",
      serverStartedAt: "",
      ...(first ? { firstServer: first } : {}),
    });
    const memberNameOf = (node: typeof A) =>
      fs.readFileSync(path.join(dbOf(node), "etcd", "name"), "utf8");
    const clusterIdAt = (node: typeof A) =>
      parseMemberList(etcdctlAt(node, "member", "list", "-w", "json").stdout, node.name).clusterId;
    /** The second each log line at the stand-in's level=... msg="TEXT" was written, in ms. */
    const loggedAt = (log: string, text: string) =>
      log
        .split("\n")
        .filter((l) => l.includes(`msg="${text}"`))
        .map((l) => Date.parse(l.split(" ")[0]));
    let aClusterId: string;

    before(async function () {
      this.timeout(240000);
      restoreStandins = await freshStandins(
        `STANDIN_KUBE_DIR=${path.join(LAB_DIR, "kube")}\n` +
          `STANDIN_ETCD_MANAGE_SECONDS=${TICK}\nSTANDIN_LEARNER_MAX_STALL_SECONDS=${STALL}\n`,
      );
      const state = await startOnNode("create", stepInputs(A, writeConfig(A), { peers: [B] }));
      assert.equal(state.active, true);
      await until(
        "the real apiserver's /readyz and the Node of .30 with EtcdIsVoter=True",
        () => kubectlOn(A, "get", "--raw", "/readyz") === "ok" && etcdIsVoter(A, A) === "True",
        180000,
      );
      aClusterId = clusterIdAt(A);
    });
    after(() => restoreStandins());

    it("the real apiserver reports readyz and the Node's Ready and EtcdIsVoter conditions as RKE2 does", () => {
      assert.equal(kubectlOn(A, "get", "--raw", "/readyz"), "ok");
      const node = JSON.parse(kubectlOn(A, "get", "node", A.name, "-o", "json")) as {
        metadata: { annotations: Record<string, string>; labels: Record<string, string> };
        status: { conditions: { type: string; status: string; reason: string }[] };
      };
      assert.equal(node.metadata.annotations["etcd.rke2.cattle.io/node-name"], memberNameOf(A));
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

    it("the gate on a joining server waits while it is a learner and passes only after the leader promoted it", async () => {
      // The leader's loop on .30 is held (as between two of its 15 s ticks) while the product's
      // node step joins .31 through .30: the stand-in on .31 adds it as a learner, starts its
      // etcd and its apiserver, and waits; it never promotes itself. Released, the leader's next
      // pass promotes it.
      const loop = learnerLoopOf(A);
      await until(
        "etcd to accept a new learner",
        () => etcdctl("endpoint", "health").status === 0 && !memberLine("192.168.122.41"),
      );
      process.kill(loop, "SIGSTOP");
      let held = true;
      try {
        const joined = await startOnNode(
          "create",
          stepInputs(B, writeConfig(B, A.ip), { joinsThrough: A }),
        );
        assert.equal(joined.active, true);
        const joinedAt = Date.now();
        const firstClusterId = await firstServerClusterId(gateState(B), firstServer);
        assert.equal(firstClusterId, aClusterId);
        const progress: { at: number; line: string }[] = [];
        let passedAt = 0;
        const gateStartedAt = Date.now();
        const gate = runScript(nodeConnection(B.octet), gateScript, {
          params: {
            NODE_NAME: B.name,
            TIMEOUT_SECONDS: "120",
            POLL_SECONDS: "1",
            MEMBERS_SCRIPT: membersScript,
            FIRST_SERVER: A.name,
            FIRST_SERVER_CLUSTER_ID: firstClusterId,
          },
          onProgress: (line) => progress.push({ at: Date.now(), line }),
        }).then((r) => {
          passedAt = Date.now();
          return r;
        });
        // Two ticks' time of .31's own loop, and a poll of the gate, with .31 still a learner.
        await until(
          "the gate to report .31 as not joined yet",
          () =>
            Date.now() - joinedAt > 2 * TICK * 1000 &&
            progress.some((p) => /^waiting for sza122031\.local/.test(p.line)),
          90000,
        );
        const learner = memberLine(B.ip);
        assert.ok(learner?.trim().endsWith("true"), `not a learner: ${learner}`);
        assert.equal(passedAt, 0, "the gate passed while .31 was a learner");
        assert.doesNotMatch(rke2Log(B), /Promoted learner/);
        process.kill(loop, "SIGCONT");
        held = false;

        const bIsVoter = () => memberLine(B.ip)?.trim().endsWith("false") ?? false;
        await until(".31 to be promoted", bIsVoter, 60000);
        const voterSeenAt = Date.now();
        assert.equal(passedAt, 0, "the gate passed before the leader promoted .31");
        const result = await gate;
        assert.equal(result.exitCode, 0, result.stderr);
        assert.ok(gateStartedAt < voterSeenAt && passedAt > voterSeenAt);

        // The leader promoted it, once; the learner never promoted itself.
        const bMember = memberNameOf(B);
        const promoted = loggedAt(rke2Log(A), `Promoted learner ${bMember}`);
        assert.equal(promoted.length, 1, rke2Log(A));
        assert.doesNotMatch(rke2Log(B), /Promoted learner/);
        // EtcdIsVoter=True is written by a later pass than the one that promoted (k3s sets the
        // condition from the member list read before the promotion), and the gate saw it.
        assert.equal(etcdIsVoter(A, B), "True");
        const voterSince = Date.parse(etcdIsVoter(A, B, "lastTransitionTime"));
        assert.ok(
          voterSince > promoted[0],
          `EtcdIsVoter became True at ${new Date(voterSince).toISOString()}, the promotion was logged at ${new Date(promoted[0]).toISOString()}`,
        );
        assert.ok(passedAt >= voterSince, "the gate passed before EtcdIsVoter was True");
      } finally {
        if (held) process.kill(loop, "SIGCONT");
      }
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

    it(`the leader removes a learner that made no progress for the stall time (${STALL} s here, 5 min in RKE2)`, async () => {
      // A server that added itself as a learner and never started etcd: no progress, ever.
      await until(
        "etcd to accept a new learner",
        () =>
          etcdctl(
            "member",
            "add",
            "never-started",
            "--learner",
            "--peer-urls",
            "http://192.168.122.44:2380",
          ).status === 0,
      );
      const addedAt = Date.now();
      await until(
        "the leader to remove the stalled learner",
        () => memberLine("192.168.122.44") === undefined,
        (STALL + 4 * TICK + 20) * 1000,
      );
      const removedAt = Date.now();
      assert.ok(
        removedAt - addedAt >= STALL * 1000,
        `removed ${removedAt - addedAt} ms after it was added, before the stall time of ${STALL} s`,
      );
      // Whichever server leads logs it, right after etcd answered (an unstarted learner has no
      // name yet, as in k3s).
      const logs = () => rke2Log(A) + rke2Log(B);
      const removedLine = () => loggedAt(logs(), "Removed learner  from etcd cluster");
      await until("the leader to log the removal", () => removedLine().length > 0, 10000);
      assert.match(logs(), /level=warning msg="Learner {2}stalled at RaftAppliedIndex=0 for \d+s"/);
      const removed = removedLine();
      assert.equal(removed.length, 1, logs());
      assert.ok(removed[0] - addedAt >= (STALL - 1) * 1000);
    });

    it("the gate fails on a server that started an etcd cluster of its own, naming it and both cluster IDs", async function () {
      this.timeout(240000);
      // .31 leaves .30's cluster as an administrator removes a server, and is rebuilt without
      // `server:`: RKE2 starts a new cluster there. Its own apiserver, Node, EtcdIsVoter and
      // member list then look like a joined server's.
      const line = memberLine(B.ip);
      assert.ok(line);
      assert.equal(etcdctl("member", "remove", line.split(",")[0]).status, 0);
      await stopRke2(B);
      fs.rmSync(path.dirname(dbOf(B)), { recursive: true, force: true });
      writeConfig(B);
      const started = await runScript(
        nodeConnection(B.octet),
        "systemctl start rke2-server.service",
      );
      assert.equal(started.exitCode, 0, started.stderr);
      await until(
        ".31's own apiserver and its Node with EtcdIsVoter=True",
        () => kubectlOn(B, "get", "--raw", "/readyz") === "ok" && etcdIsVoter(B, B) === "True",
        180000,
      );
      const ownClusterId = clusterIdAt(B);
      assert.notEqual(ownClusterId, aClusterId);
      // Without the first server's cluster ID, the gate passes it.
      const blind = await runScript(nodeConnection(B.octet), gateScript, {
        params: {
          NODE_NAME: B.name,
          TIMEOUT_SECONDS: "30",
          POLL_SECONDS: "1",
          MEMBERS_SCRIPT: membersScript,
        },
      });
      assert.equal(blind.exitCode, 0, blind.stderr);
      // The product's gate reads the first server's cluster ID there and refuses it at once.
      const began = Date.now();
      await assert.rejects(
        joinGateProvider.create!(gateState(B, firstServer)),
        new RegExp(
          `join gate for sza122031\\.local: its etcd serves cluster ${ownClusterId}, not cluster ` +
            `${aClusterId} of the first server sza122030\\.local: sza122031\\.local started an ` +
            `etcd cluster of its own`,
        ),
      );
      assert.ok(Date.now() - began < 30000, "the gate waited instead of failing at once");
    });

    it("the gate fails, saying so, when it cannot reach the first server's etcd cluster", async () => {
      await stopRke2(A);
      await assert.rejects(
        joinGateProvider.create!(gateState(B, firstServer)),
        /join gate for sza122031\.local: cannot reach the etcd cluster of the first server sza122030\.local to compare cluster IDs: .*sza122030\.local/,
      );
    });
  });

  describe("rke2.drain on a server built by hand, its node name and an operators' key in a drop-in", () => {
    const DROP_IN = "/etc/rancher/rke2/config.yaml.d/60-ops.yaml";
    const DROP_IN_TEXT = `# the operators' settings\nnode-name: ${B.name}\nnode-label+:\n  - ops=hand\n`;
    const POD = "/etc/rancher/rke2/drain-pod.yaml";
    const read = (file: string) => fs.readFileSync(nodeFile(B.octet, file), "utf8");
    // What the stack asks: every managed key in one text, node-name included.
    const wanted = (extra = "") =>
      `server: https://${A.ip}:9345\ntoken: ${CLUSTER_TOKEN}\nnode-name: ${B.name}\nnode-ip: ${B.ip}\n${extra}`;
    const withDrain = (config: string): NodeStartInputs => ({
      ...stepInputs(B, config, { joinsThrough: A }),
      drain: {
        script: componentFile(RKE2, "drain-node.sh"),
        timeoutSeconds: 60,
        podSelector: "",
        through: { node: A.name, connection: pinnedEndpoint(nodeConnection(A.octet)) },
      },
    });
    const unschedulable = () =>
      kubectlOn(A, "get", "node", B.name, "-o", "jsonpath={.spec.unschedulable}");
    let restoreStandins = async () => {};
    let configBefore: string;
    before(async function () {
      this.timeout(300000);
      // Both run RKE2's stand-in as management servers do: the real kube-apiserver and the Nodes.
      restoreStandins = await freshStandins(
        `STANDIN_KUBE_DIR=${path.join(LAB_DIR, "kube")}\nSTANDIN_ETCD_MANAGE_SECONDS=3\n`,
        true,
      );
      const first = await startOnNode("create", stepInputs(A, writeConfig(A), { peers: [B] }));
      assert.equal(first.active, true);
      await until(
        "the apiserver of .30",
        () => kubectlOn(A, "get", "--raw", "/readyz") === "ok",
        180000,
      );
      // .31 built by hand: config.yaml without node-name, which a drop-in sets beside a '+' key,
      // and RKE2 started by its operators.
      const config = nodeFile(B.octet, "/etc/rancher/rke2/config.yaml");
      fs.mkdirSync(path.dirname(nodeFile(B.octet, DROP_IN)), { recursive: true });
      fs.writeFileSync(
        config,
        `server: https://${A.ip}:9345\ntoken: ${CLUSTER_TOKEN}\nnode-ip: ${B.ip}\n`,
      );
      fs.writeFileSync(nodeFile(B.octet, DROP_IN), DROP_IN_TEXT);
      configBefore = fs.readFileSync(config, "utf8");
      const started = await runScript(
        nodeConnection(B.octet),
        `INSTALL_RKE2_VERSION=v1.35.7+rke2r1 INSTALL_RKE2_TYPE=server ${INSTALL} && systemctl enable --now rke2-server.service`,
      );
      assert.equal(started.exitCode, 0, started.stderr);
      await until("the Node of .31, a voter", () => etcdIsVoter(A, B) === "True", 180000);
      // A pod a ReplicaSet would own, bound to .31 as the scheduler binds it, after the
      // namespace's ServiceAccount (the lab runs no controller that makes it).
      fs.writeFileSync(
        nodeFile(A.octet, POD),
        `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: default\n---\n` +
          `apiVersion: v1\nkind: Pod\nmetadata:\n  name: on-b\n  namespace: default\n` +
          `  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: on-b, uid: ${crypto.randomUUID()}, controller: true}\n` +
          `spec:\n  nodeName: ${B.name}\n  automountServiceAccountToken: false\n  containers:\n  - {name: main, image: registry.invalid/app:1}\n`,
      );
    });

    after(() => restoreStandins());

    it("adopting it restarts nothing and drains nothing: no restart, no file written or moved, the Node schedulable", async () => {
      const restarts = unitState(B.octet, "rke2-server.service").history.length;
      // Its first step adopts it, as the first pulumi up of an estate built by hand does.
      const state = await startOnNode("create", withDrain(wanted()));
      assert.deepEqual(state.lastChanges, []);
      assert.equal(unitState(B.octet, "rke2-server.service").history.length, restarts);
      assert.equal(read("/etc/rancher/rke2/config.yaml"), configBefore);
      assert.equal(read(DROP_IN), DROP_IN_TEXT);
      assert.equal(unschedulable(), "");
    });

    it("a managed key that changes drains the Node under the name its drop-in gives (its pod evicted), restarts once and uncordons it; the drop-in stays as it was", async () => {
      assert.notEqual(kubectlOn(A, "apply", "-f", POD), "");
      await until("the pod on .31", () => kubectlOn(A, "get", "pod", "on-b", "-o", "name") !== "");
      const restarts = unitState(B.octet, "rke2-server.service").history.length;
      const state = await startOnNode("update", withDrain(wanted("etcd-snapshot-retention: 7\n")));
      assert.equal(unitState(B.octet, "rke2-server.service").history.length, restarts + 1);
      assert.equal(kubectlOn(A, "get", "pod", "on-b", "-o", "name"), "", "the pod was not evicted");
      assert.equal(unschedulable(), "");
      assert.equal(
        kubectlOn(A, "get", "node", B.name, "-o", "jsonpath={.metadata.annotations}").includes(
          "rke2-remediation/cordoned-for-restart",
        ),
        false,
      );
      assert.equal(read(DROP_IN), DROP_IN_TEXT);
      const written = YAML.parse(read("/etc/rancher/rke2/config.yaml"));
      assert.equal(written["etcd-snapshot-retention"], 7);
      assert.equal(written["node-name"], undefined, "node-name moved out of the drop-in");
      assert.equal(state.hostNodeName, B.name);
    });
  });
});
