/**
 * Registrations with the lab's Rancher stand-in that cannot succeed, or not at once, run with the
 * product's register-node.sh on a lab node: each fails within a minute naming its cause (an
 * unknown token, a URL that leads elsewhere, a Rancher that does not answer, TLS), or is carried
 * through by the installer's retries (a Rancher that has just started), and no process shows the
 * registration token but the one upstream's installer starts.
 */
import * as assert from "assert/strict";
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import { scriptWithParams } from "../../components/ssh/run-script";
import { commandLineLeaks, sampleCommandLines, sliceOf } from "../support/secret-traces";
import {
  filesUnder,
  handDeleteDnsHost,
  inNamespace,
  lab,
  LAB_DIR,
  labNs,
  nodeFile,
  REPO,
  unitState,
} from "./lab";
import {
  ALLOW_HTTPS,
  CA,
  ClusterView,
  newCluster,
  onNode,
  rancher,
  RANCHER_IP,
  reachRancher,
  REJECT_HTTPS,
  SERVER,
  sha256,
  WORKER,
} from "./rancher-lab";

/** Runs register-node.sh (the product's) on a node, sampling every command line meanwhile. */
async function registerWith(octet: number, params: Record<string, string>) {
  const pid = fs.readFileSync(path.join(LAB_DIR, "nodes", `n${octet}`, "sshd.pid"), "utf8").trim();
  const script = componentFile(
    path.join(REPO, "bin", "components", "rancher-cluster"),
    "register-node.sh",
  );
  const started = Date.now();
  const run = new Promise<{ status: number; out: string }>((resolve) => {
    const child = spawn("nsenter", ["--target", pid, "--mount", "--net", "bash", "-s"]);
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("close", (status) => resolve({ status: status ?? -1, out }));
    child.stdin.end(scriptWithParams(script, params));
  });
  const commandLines = await sampleCommandLines(run);
  return { ...(await run), seconds: (Date.now() - started) / 1000, commandLines };
}

/**
 * Neither the step's output nor any command line on the machine while it ran (but upstream's one
 * curl of /v3/connect/agent) holds 8 characters of `token`.
 */
function assertNoTrace(r: { out: string; commandLines: Set<string> }, token: string) {
  assert.equal(sliceOf([token], r.out), undefined, "a slice of the token is in the step's output");
  assert.deepEqual(commandLineLeaks(r.commandLines, [token]), []);
}

describe("a registration that cannot succeed fails within a minute, naming why", function () {
  this.timeout(300000);
  const TOKEN = "lab0refused0token0aaaabbbbccccddddeeeeffff0000111122223";
  let checksum = "";
  const params = () => ({
    MODE: "apply",
    INSTALLER_URL: `${SERVER}/system-agent-install.sh`,
    CATTLE_SERVER: SERVER,
    CATTLE_TOKEN: TOKEN,
    CATTLE_CA_CHECKSUM: checksum,
    INSECURE: "false",
    ROLE_FLAGS: "--worker",
    RANCHER_CA: CA,
    RANCHER_HOST: "ai-ear.cn",
    TIMEOUT_SECONDS: "600",
    POLL_SECONDS: "2",
  });
  const token = () => TOKEN;

  let addedRecord = false;

  before(() => {
    assert.equal(lab("reset-node", String(WORKER)).status, 0);
    checksum = sha256(CA.endsWith("\n") ? CA : `${CA}\n`);
    addedRecord = reachRancher();
  });
  after(() => {
    inNamespace(labNs("n20"), ["iptables", "-D", ...REJECT_HTTPS]);
    inNamespace(labNs("n20"), ["iptables", "-D", ...ALLOW_HTTPS]);
    if (addedRecord) handDeleteDnsHost(RANCHER_IP);
    lab("reset-node", String(WORKER));
  });

  it("a token Rancher does not know (500 from /v3/connect/agent)", async () => {
    const r = await registerWith(WORKER, params());
    assert.equal(r.status, 1, r.out);
    assert.match(
      r.out,
      /error: the agent installer was stopped: Rancher at https:\/\/ai-ear\.cn refuses the registration token/,
    );
    assert.ok(r.seconds < 60, `took ${r.seconds} s`);
    assertNoTrace(r, token());
  });

  it("a URL that leads elsewhere (404 from /cacerts), named before the installer's hours of retries", async () => {
    const r = await registerWith(WORKER, { ...params(), CATTLE_SERVER: `${SERVER}/elsewhere` });
    assert.equal(r.status, 1, r.out);
    assert.match(
      r.out,
      /error: the agent installer was stopped: Rancher at https:\/\/ai-ear\.cn\/elsewhere answered 404 while downloading the CA certificate, 3 tries in a row: the URL does not lead to Rancher/,
    );
    // Upstream's curl line came through as install.sh prints it (-sS, stderr not redirected).
    assert.match(r.out, /installer: curl: \(22\) The requested URL returned error: 404/);
    assert.ok(r.seconds < 60, `took ${r.seconds} s`);
    assertNoTrace(r, token());
  });

  it("a Rancher that does not answer (its port rejected)", async () => {
    assert.equal(inNamespace(labNs("n20"), ["iptables", "-I", ...REJECT_HTTPS]).status, 0);
    const r = await registerWith(WORKER, params());
    assert.equal(r.status, 1, r.out);
    // The installer itself comes from Rancher: its download is what fails first.
    assert.match(
      r.out,
      /error: the agent installer could not be downloaded from https:\/\/ai-ear\.cn\/system-agent-install\.sh: Rancher at https:\/\/ai-ear\.cn refuses connections from this node \(curl: \(7\) [^)]*\), at its download/,
    );
    assert.ok(r.seconds < 60, `took ${r.seconds} s`);
    assertNoTrace(r, token());
  });

  // Rancher's certificate names ai-ear.cn only (the lab's server.pem): reached by its address,
  // TLS fails as it does for a certificate the pinned CA did not sign (curl 60 either way).
  const byAddress = () => ({
    ...params(),
    INSTALLER_URL: `https://${RANCHER_IP}/system-agent-install.sh`,
    CATTLE_SERVER: `https://${RANCHER_IP}`,
  });

  it("TLS that fails (a certificate that does not name the host): the installer's download says so", async () => {
    inNamespace(labNs("n20"), ["iptables", "-D", ...REJECT_HTTPS]);
    const r = await registerWith(WORKER, byAddress());
    assert.equal(r.status, 1, r.out);
    assert.match(
      r.out,
      /error: the agent installer could not be downloaded from https:\/\/192\.168\.122\.20\/system-agent-install\.sh: TLS with Rancher at https:\/\/192\.168\.122\.20 fails \(curl: \(60\) [^)]*\), at its download: its certificate is not signed by the CA the node trusts .* or does not name that host/,
    );
    assert.ok(r.seconds < 30, `took ${r.seconds} s`);
    assertNoTrace(r, token());
  });

  it("TLS that fails behind an insecure download (the stack's opt-in): install.sh's own check is stopped after 3 tries", async () => {
    // The installer comes with --insecure; install.sh fetches /cacerts with --insecure as well
    // and its checksum matches; /healthz, trusting that CA, then fails on the name
    // (rancher/system-agent@v0.14.0 install.sh validate_rancher_connection).
    const r = await registerWith(WORKER, { ...byAddress(), INSECURE: "true" });
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /installer: curl: \(60\) /);
    assert.match(
      r.out,
      /error: the agent installer was stopped: TLS with Rancher at https:\/\/192\.168\.122\.20 fails \(curl: \(60\) [^)]*\), 3 tries in a row: its certificate/,
    );
    assert.ok(r.seconds < 30, `took ${r.seconds} s`);
    assertNoTrace(r, token());
  });
});

describe("a registration that fails on a server built by hand", function () {
  this.timeout(300000);
  const TOKEN = "lab0hand0built0token0aaaabbbbccccddddeeeeffff00001111222";
  const rke2Dirs = ["/etc/rancher/rke2", "/var/lib/rancher/rke2"];
  after(() => lab("reset-node", String(WORKER)));

  it("touches none of its RKE2 files and restarts nothing (its own node name, token and unmanaged keys)", async () => {
    assert.equal(lab("reset-node", String(WORKER)).status, 0);
    // RKE2 as its operators installed it: their node name, their token, a key the product does
    // not manage, a drop-in, the server's token file, and the unit running.
    const put = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(nodeFile(WORKER, file)), { recursive: true });
      fs.writeFileSync(nodeFile(WORKER, file), text);
    };
    put(
      "/etc/rancher/rke2/config.yaml",
      `node-name: rke2-ops-worker\ntoken: ${TOKEN}\nkubelet-arg: [max-pods=250]\n`,
    );
    put("/etc/rancher/rke2/config.yaml.d/20-ops.yaml", "node-label: [team=ops]\n");
    put("/var/lib/rancher/rke2/server/token", `${TOKEN}\n`);
    fs.mkdirSync(nodeFile(WORKER, "/var/lib/systemctl-double/units/rke2-server.service"), {
      recursive: true,
    });
    const started = onNode(WORKER, "systemctl enable rke2-server && systemctl start rke2-server\n");
    assert.equal(started.status, 0, started.out);
    const calls = nodeFile(WORKER, "/var/lib/systemctl-double/calls.log");
    const callsBefore = fs.readFileSync(calls, "utf8").length;
    const before = filesUnder(WORKER, rke2Dirs);
    assert.ok(
      before.some((f) => f.includes("config.yaml.d/20-ops.yaml")),
      before.join("\n"),
    );
    // A registration that fails (Rancher reached by its address: refused by .20's firewall as the
    // lab leaves it, or TLS, as its certificate does not name that address).
    const r = await registerWith(WORKER, {
      MODE: "apply",
      INSTALLER_URL: `https://${RANCHER_IP}/system-agent-install.sh`,
      CATTLE_SERVER: `https://${RANCHER_IP}`,
      CATTLE_TOKEN: "lab0hand0built0registration0token0aaaabbbbccccdddd1111",
      CATTLE_CA_CHECKSUM: sha256(CA.endsWith("\n") ? CA : `${CA}\n`),
      INSECURE: "false",
      ROLE_FLAGS: "--worker",
      RANCHER_CA: CA,
      RANCHER_HOST: "ai-ear.cn",
      TIMEOUT_SECONDS: "60",
      POLL_SECONDS: "1",
    });
    assert.equal(r.status, 1, r.out);
    assert.match(
      r.out,
      /error: the agent installer could not be downloaded from https:\/\/192\.168\.122\.20/,
    );
    // Every file of its RKE2 config and data-dir as it was, none moved; the unit untouched.
    assert.deepEqual(filesUnder(WORKER, rke2Dirs), before);
    assert.equal(unitState(WORKER, "rke2-server.service").active, true);
    const later = fs.readFileSync(calls, "utf8").slice(callsBefore);
    assert.doesNotMatch(later, /systemctl (stop|restart|disable|enable|start) rke2/);
  });
});

describe("a Rancher that has just started: its config server answers 503, then 401, then registers", function () {
  this.timeout(300000);
  const configServer = path.join(LAB_DIR, "rancher", "config-server");
  let cluster: ClusterView;
  let checksum = "";
  let addedRecord = false;
  /** The config server's next `capi` answers are 503, the `informers` after them 401. */
  const startingFor = (capi: number, informers: number) =>
    fs.writeFileSync(
      configServer,
      JSON.stringify({ capiNotReadyFor: capi, informersUnsyncedFor: informers }),
    );
  const params = (extra: Record<string, string> = {}) => ({
    MODE: "apply",
    INSTALLER_URL: `${SERVER}/system-agent-install.sh`,
    CATTLE_SERVER: SERVER,
    CATTLE_TOKEN: cluster.registrationToken.token,
    CATTLE_CA_CHECKSUM: checksum,
    INSECURE: "false",
    ROLE_FLAGS: "--worker",
    RANCHER_CA: CA,
    RANCHER_HOST: "ai-ear.cn",
    TIMEOUT_SECONDS: "120",
    POLL_SECONDS: "1",
    ...extra,
  });
  const token = () => cluster.registrationToken.token;

  before(async () => {
    assert.equal(lab("reset-node", String(WORKER)).status, 0);
    checksum = sha256(CA.endsWith("\n") ? CA : `${CA}\n`);
    addedRecord = reachRancher();
    cluster = await newCluster("starting");
  });
  afterEach(() => {
    fs.rmSync(configServer, { force: true });
    lab("reset-node", String(WORKER));
  });
  after(async () => {
    if (cluster) await rancher("DELETE", `/v3/clusters/${cluster.id}`);
    inNamespace(labNs("n20"), ["iptables", "-D", ...ALLOW_HTTPS]);
    if (addedRecord) handDeleteDnsHost(RANCHER_IP);
  });

  it("503 while CAPI is not ready, then 401 while its caches sync: the installer's retries carry the registration through", async () => {
    startingFor(2, 2);
    const r = await registerWith(WORKER, params());
    assert.equal(r.status, 0, r.out);
    const answers = [...r.out.matchAll(/(\d{3}) received while downloading Rancher connection/g)];
    assert.deepEqual(
      answers.map((a) => a[1]),
      ["503", "503", "401", "401"],
    );
    assert.match(r.out, /ok: rancher-system-agent is active/);
    // Four tries 5 s apart, then the one that registers.
    assert.ok(r.seconds < 4 * 6 + 15, `took ${r.seconds} s`);
    assertNoTrace(r, token());
  });

  // The bound itself (24 tries, about two minutes) is the unit tier's; here a bound of 4 tries
  // shows the real installer's lines read and named.
  for (const [label, capi, informers, reason] of [
    [
      "401 that lasts (caches that never sync, or a stale token)",
      0,
      1000,
      /Rancher at https:\/\/ai-ear\.cn answered 401 while downloading Rancher connection information, 4 tries in a row over \d+ s: Rancher answers so while its caches sync/,
    ],
    [
      "503 that lasts (CAPI never available)",
      1000,
      0,
      /Rancher at https:\/\/ai-ear\.cn answered 503 while downloading Rancher connection information, 4 tries in a row over \d+ s: Rancher, or the proxy in front of it, is up but not ready/,
    ],
  ] as const) {
    it(`a ${label} is stopped at the bound, named`, async () => {
      startingFor(capi, informers);
      const r = await registerWith(WORKER, params({ TRANSIENT_TRIES: "4" }));
      assert.equal(r.status, 1, r.out);
      assert.match(r.out, new RegExp(`error: the agent installer was stopped: ${reason.source}`));
      assert.ok(r.seconds < 4 * 6 + 10, `took ${r.seconds} s`);
      assertNoTrace(r, token());
    });
  }
});
