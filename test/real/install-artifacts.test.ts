/**
 * Installing RKE2 from its release artifacts (`rke2.artifacts`) on lab node .31, with no
 * installCommand that could run: the node step copies the files over SSH, checks each against the
 * release's checksum file, and runs the release's install.sh with INSTALL_RKE2_ARTIFACT_PATH (the
 * lab's installer stand-in follows rancher/rke2@v1.35.7+rke2r1:install.sh on that path). The
 * artifacts are made here: a tarball holding the lab's bin/rke2, an images archive of random
 * bytes, and their checksum file written by sha256sum. They come from a directory here
 * (`path`), then, for an upgrade, from an HTTPS mirror in .31's namespace (`url`): Python's own
 * HTTP server over TLS (test/lab/https-mirror.py), its certificate from a CA openssl makes here.
 */
import * as assert from "assert/strict";
import { ChildProcess, spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { componentFile } from "../../components/assets";
import { desiredManagedKeys } from "../../components/rke2-cluster/config-adoption";
import { NodeStartInputs, startOnNode } from "../../components/rke2-cluster/provider";
import { pinnedEndpoint, runScript } from "../../components/ssh/run-script";
import {
  inNamespace,
  lab,
  labNs,
  nodeConnection,
  nodeFile,
  REPO,
  run,
  stepKey,
  unitState,
} from "./lab";

const RKE2 = path.join(__dirname, "../../components/rke2-cluster");
const NODE = { octet: 31, name: "sza122031.local", ip: "192.168.122.31" };
const VERSION = "v1.35.7+rke2r1";
const STAGED = `/var/lib/rke2-remediation/artifacts/${VERSION}`;
const IMAGES = "rke2-images.linux-amd64.tar.zst";
const TARBALL = "rke2.linux-amd64.tar.gz";

const sha256 = (file: string) =>
  crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

/** One release's artifacts, as an operator downloads them, in a new directory. */
function releaseDir(version: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2-artifacts-"));
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), "rke2-tarball-"));
  fs.mkdirSync(path.join(tree, "bin"));
  // The lab's rke2 binary stand-in (test/lab/rke2-standin/install.sh writes the same).
  fs.writeFileSync(
    path.join(tree, "bin", "rke2"),
    `#!/bin/sh\necho "rke2 version ${version} (lab-standin)"\necho "go version go1.24"\n`,
    { mode: 0o755 },
  );
  assert.equal(run("tar", ["czf", path.join(dir, TARBALL), "-C", tree, "bin/rke2"]).status, 0);
  fs.rmSync(tree, { recursive: true });
  fs.writeFileSync(path.join(dir, IMAGES), crypto.randomBytes(3 << 20));
  fs.copyFileSync(
    path.join(REPO, "test", "lab", "rke2-standin", "install.sh"),
    path.join(dir, "install.sh"),
  );
  const sums = run("sh", ["-c", 'cd "$1" && sha256sum "$2" "$3"', "sh", dir, TARBALL, IMAGES]);
  assert.equal(sums.status, 0, sums.stderr);
  fs.writeFileSync(path.join(dir, "sha256sum-amd64.txt"), sums.stdout);
  return dir;
}

function configText(): string {
  return `token: lab-artifacts-token\nnode-name: ${NODE.name}\nnode-ip: ${NODE.ip}\n`;
}

function inputs(
  artifacts: string | { url: string; caFile?: string },
  version = VERSION,
): NodeStartInputs {
  const config = configText();
  return {
    node: NODE.name,
    nodeIp: NODE.ip,
    role: "server",
    connection: pinnedEndpoint(nodeConnection(NODE.octet)),
    ...stepKey(),
    script: componentFile(RKE2, "rke2-start.sh"),
    factsScript: componentFile(RKE2, "rke2-facts.sh"),
    membersScript: componentFile(RKE2, "etcd-members.sh"),
    version,
    // Nothing installs unless the artifacts do: this command would fail the step.
    installCommand: "echo 'installCommand ran' >&2; exit 3",
    artifacts: typeof artifacts === "string" ? { path: artifacts } : artifacts,
    config,
    managedKeys: desiredManagedKeys(config),
    peers: [],
  };
}

/** What an install would have left on the node: none of it may be there after a refusal. */
function nothingInstalled() {
  assert.ok(!fs.existsSync(nodeFile(NODE.octet, "/usr/local/bin/rke2")), "rke2 installed");
  assert.ok(!fs.existsSync(nodeFile(NODE.octet, `/var/lib/rancher/rke2/agent/images/${IMAGES}`)));
  assert.ok(
    !fs.existsSync(
      nodeFile(NODE.octet, "/var/lib/rke2-remediation/rke2-server.service.restart-pending"),
    ),
  );
  assert.equal(unitState(NODE.octet, "rke2-server.service").active, false);
}

describe("installing RKE2 from its release artifacts (lab node .31)", function () {
  this.timeout(180000);
  let release: string;
  const dirs: string[] = [];

  before(() => {
    assert.equal(lab("reset-node", String(NODE.octet)).status, 0);
    const file = nodeFile(NODE.octet, "/etc/rancher/rke2/config.yaml");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, configText());
    release = releaseDir(VERSION);
    dirs.push(release);
  });
  after(async () => {
    await runScript(nodeConnection(NODE.octet), "systemctl stop rke2-server.service || true");
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    assert.equal(lab("reset-node", String(NODE.octet)).status, 0);
  });

  it("a tarball that does not match the release's checksum file stops the step before anything is copied, naming the file", async () => {
    const bad = releaseDir(VERSION);
    dirs.push(bad);
    fs.appendFileSync(path.join(bad, TARBALL), "x");
    await assert.rejects(
      startOnNode("create", inputs(bad)),
      (err: Error) =>
        err.message.includes(`rke2.artifacts.path: ${TARBALL} in ${bad} has SHA-256`) &&
        err.message.includes("nothing was changed on any host"),
    );
    assert.ok(!fs.existsSync(nodeFile(NODE.octet, STAGED)), "files were copied");
    nothingInstalled();
  });

  it("a staged file that differs from the release's on the node is refused there before anything changes, naming it", async () => {
    // As a copy cut short or altered on the host would leave it: rke2-start.sh checks again.
    const staged = nodeFile(NODE.octet, STAGED);
    fs.mkdirSync(staged, { recursive: true });
    for (const name of fs.readdirSync(release))
      fs.copyFileSync(path.join(release, name), path.join(staged, name));
    fs.appendFileSync(path.join(staged, IMAGES), "x");
    const r = await runScript(nodeConnection(NODE.octet), componentFile(RKE2, "rke2-start.sh"), {
      params: {
        ROLE: "server",
        VERSION,
        INSTALL: "yes",
        INSTALL_COMMAND: "exit 3",
        ARTIFACTS_DIR: STAGED,
        ARTIFACTS_SHA256: [TARBALL, IMAGES]
          .map((n) => `${sha256(path.join(release, n))} ${n}`)
          .join("\n"),
        MOVE_STALE: "no",
        DATA_DIR: "/var/lib/rancher/rke2",
        FOUND_SHA256: sha256(nodeFile(NODE.octet, "/etc/rancher/rke2/config.yaml")),
        NEW_CONFIG_B64: "",
        ACTION: "start",
        FACTS_SCRIPT: componentFile(RKE2, "rke2-facts.sh"),
      },
    });
    assert.notEqual(r.exitCode, 0);
    assert.match(
      r.stderr,
      new RegExp(
        `error: ${IMAGES.replace(/\./g, "\\.")} staged in ${STAGED.replace(/[.+]/g, "\\$&")} has SHA-256 [0-9a-f]{64}, not the release's ${sha256(path.join(release, IMAGES))}; nothing was changed`,
      ),
    );
    nothingInstalled();
    fs.rmSync(staged, { recursive: true });
  });

  it("installs from the artifacts: no installCommand, the release's images in place, the staged copies removed, RKE2 started", async () => {
    const state = await startOnNode("create", inputs(release));
    assert.equal(state.installedVersion, VERSION);
    assert.equal(state.active, true);
    assert.ok(
      state.lastChanges.some((c) =>
        c.startsWith(`installed RKE2 ${VERSION} (server) from the release artifacts`),
      ),
      state.lastChanges.join("; "),
    );
    assert.equal(
      sha256(nodeFile(NODE.octet, `/var/lib/rancher/rke2/agent/images/${IMAGES}`)),
      sha256(path.join(release, IMAGES)),
    );
    const version = await runScript(nodeConnection(NODE.octet), "/usr/local/bin/rke2 --version");
    assert.match(version.stdout, new RegExp(`^rke2 version ${VERSION.replace("+", "\\+")} `));
    assert.ok(!fs.existsSync(nodeFile(NODE.octet, STAGED)), "the staged copies are still there");
    assert.equal(unitState(NODE.octet, "rke2-server.service").active, true);
  });

  it("a node that runs the stack's release installs nothing and copies nothing on the next update", async () => {
    const state = await startOnNode("update", inputs(release));
    assert.deepEqual(state.lastChanges, []);
    assert.ok(!fs.existsSync(nodeFile(NODE.octet, STAGED)));
  });
});

const UPGRADE = "v1.36.3+rke2r1";
// Under /var/lib: each lab node has its own (test/real/lab.ts nodeFile).
const DATA_DIR = "/var/lib/rke2-ops-data";
const DATA_DIR_DROP_IN = "/etc/rancher/rke2/config.yaml.d/40-data-dir.yaml";
const MIRROR = `https://${NODE.ip}:8443`;
const ALLOW_MIRROR = ["INPUT", "-p", "tcp", "--dport", "8443", "-j", "ACCEPT"];

/** A CA and a server certificate it signs for .31's address, made here with openssl. */
function mirrorCertificates(dir: string) {
  const sh = (script: string) => {
    const r = run("sh", ["-ec", script, "sh", dir]);
    assert.equal(r.status, 0, r.stderr);
  };
  const ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  sh(`cd "$1"
    openssl req -x509 ${ec} -keyout ca.key -out ca.pem -days 1 -subj /CN=lab-mirror-ca 2>/dev/null
    openssl req ${ec} -keyout key.pem -out server.csr -subj /CN=${NODE.ip} 2>/dev/null
    printf 'subjectAltName=IP:${NODE.ip}\\n' > san.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \\
      -extfile san.ext -out cert.pem 2>/dev/null`);
  return {
    ca: path.join(dir, "ca.pem"),
    cert: path.join(dir, "cert.pem"),
    key: path.join(dir, "key.pem"),
  };
}

describe("installing RKE2 from an internal HTTPS mirror (lab node .31, its data-dir in a drop-in, upgraded)", function () {
  this.timeout(180000);
  let root: string;
  let ca: string;
  let server: ChildProcess;
  const requests: string[] = [];
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), "rke2-mirror-cache-"));
  const savedCache = process.env.XDG_CACHE_HOME;
  const tarballPath = `/${UPGRADE.replace("+", "%2B")}/${TARBALL}`;

  before(async () => {
    // .31 as its operators built it: RKE2's data-dir moved by a drop-in, the path release
    // installed there (the images under that data-dir, where RKE2 loads them).
    await runScript(nodeConnection(NODE.octet), "systemctl stop rke2-server.service || true");
    assert.equal(lab("reset-node", String(NODE.octet)).status, 0);
    fs.mkdirSync(path.dirname(nodeFile(NODE.octet, DATA_DIR_DROP_IN)), { recursive: true });
    fs.writeFileSync(nodeFile(NODE.octet, "/etc/rancher/rke2/config.yaml"), configText());
    fs.writeFileSync(nodeFile(NODE.octet, DATA_DIR_DROP_IN), `data-dir: ${DATA_DIR}\n`);
    const first = releaseDir(VERSION);
    const staged = await startOnNode("create", inputs(first));
    fs.rmSync(first, { recursive: true, force: true });
    assert.equal(staged.installedVersion, VERSION);
    assert.equal(staged.dataDir, DATA_DIR);
    root = fs.mkdtempSync(path.join(os.tmpdir(), "rke2-mirror-"));
    const release = releaseDir(UPGRADE);
    fs.renameSync(path.join(release, "install.sh"), path.join(root, "install.sh"));
    fs.renameSync(release, path.join(root, UPGRADE));
    const certs = mirrorCertificates(fs.mkdtempSync(path.join(os.tmpdir(), "rke2-mirror-ca-")));
    ca = certs.ca;
    assert.equal(inNamespace(labNs("n31"), ["iptables", "-I", ...ALLOW_MIRROR]).status, 0);
    server = spawn("ip", [
      "netns",
      "exec",
      labNs("n31"),
      "python3",
      path.join(REPO, "test", "lab", "https-mirror.py"),
      NODE.ip,
      "8443",
      root,
      certs.cert,
      certs.key,
    ]);
    server.stderr!.on("data", (d: Buffer) =>
      requests.push(...d.toString().split("\n").filter(Boolean)),
    );
    await new Promise<void>((resolve, reject) => {
      server.stdout!.once("data", () => resolve());
      server.once("exit", (code) =>
        reject(new Error(`the mirror exited (${code}): ${requests.join("; ")}`)),
      );
    });
    process.env.XDG_CACHE_HOME = cache;
  });
  after(async () => {
    server?.kill();
    inNamespace(labNs("n31"), ["iptables", "-D", ...ALLOW_MIRROR]);
    if (savedCache === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = savedCache;
    for (const dir of [root, path.dirname(ca), cache])
      fs.rmSync(dir, { recursive: true, force: true });
    await runScript(nodeConnection(NODE.octet), "systemctl stop rke2-server.service || true");
    assert.equal(lab("reset-node", String(NODE.octet)).status, 0);
  });

  const stillRunsPathRelease = async () => {
    const version = await runScript(nodeConnection(NODE.octet), "/usr/local/bin/rke2 --version");
    assert.match(version.stdout, new RegExp(`^rke2 version ${VERSION.replace("+", "\\+")} `));
    assert.ok(
      !fs.existsSync(nodeFile(NODE.octet, `/var/lib/rke2-remediation/artifacts/${UPGRADE}`)),
    );
  };

  it("a mirror whose certificate no CA here vouches for is refused before anything is fetched or copied, pointing to rke2.artifacts.caFile", async () => {
    await assert.rejects(startOnNode("update", inputs({ url: MIRROR }, UPGRADE)), (err: Error) => {
      assert.match(
        err.message,
        /^rke2\.artifacts\.url: could not fetch https:\/\/192\.168\.122\.31:8443\/v1\.36\.3%2Brke2r1\/sha256sum-amd64\.txt: its certificate is not signed by a CA this machine trusts \(\w+\)\. Set rke2\.artifacts\.caFile .*nothing was changed on any host\.$/,
      );
      return true;
    });
    assert.deepEqual(requests, []);
    await stillRunsPathRelease();
  });

  it("a tarball on the mirror that does not hash as the release's checksum file says is refused, naming its URL, and leaves nothing in the cache", async () => {
    const file = path.join(root, UPGRADE, TARBALL);
    const good = fs.readFileSync(file);
    fs.appendFileSync(file, "x");
    try {
      await assert.rejects(
        startOnNode("update", inputs({ url: MIRROR, caFile: ca }, UPGRADE)),
        (err: Error) =>
          err.message.startsWith(`rke2.artifacts.url: ${MIRROR}${tarballPath} has SHA-256 `) &&
          err.message.includes("nothing was changed on any host"),
      );
    } finally {
      fs.writeFileSync(file, good);
    }
    const cached = fs.readdirSync(cache, { recursive: true }).map(String);
    assert.ok(!cached.some((f) => f.includes(TARBALL)), cached.join(", "));
    await stillRunsPathRelease();
  });

  it("upgrades from the mirror with its CA: the checksum file, install.sh, tarball and images fetched once each, checked, copied and installed, the images under the data-dir a drop-in sets", async () => {
    requests.length = 0;
    const state = await startOnNode("update", inputs({ url: MIRROR, caFile: ca }, UPGRADE));
    assert.equal(state.installedVersion, UPGRADE);
    assert.equal(state.active, true);
    assert.ok(
      state.lastChanges.some(
        (c) => c.includes(`RKE2 ${UPGRADE}`) && c.includes("from the release artifacts"),
      ),
      state.lastChanges.join("; "),
    );
    const version = await runScript(nodeConnection(NODE.octet), "/usr/local/bin/rke2 --version");
    assert.match(version.stdout, new RegExp(`^rke2 version ${UPGRADE.replace("+", "\\+")} `));
    // Under the data-dir the drop-in sets, not install.sh's default.
    assert.equal(
      sha256(nodeFile(NODE.octet, `${DATA_DIR}/agent/images/${IMAGES}`)),
      sha256(path.join(root, UPGRADE, IMAGES)),
    );
    assert.ok(!fs.existsSync(nodeFile(NODE.octet, `/var/lib/rancher/rke2/agent/images/${IMAGES}`)));
    const dir = `/${UPGRADE.replace("+", "%2B")}`;
    assert.deepEqual(requests, [
      `GET ${dir}/sha256sum-amd64.txt 200`,
      "GET /install.sh 200",
      `GET ${dir}/${TARBALL} 200`,
      `GET ${dir}/${IMAGES} 200`,
    ]);
  });

  it("the next update on that host, its token and node-name in config.yaml and data-dir in a drop-in, fetches, copies, rewrites and restarts nothing", async () => {
    const files = ["/etc/rancher/rke2/config.yaml", DATA_DIR_DROP_IN].map((f) =>
      nodeFile(NODE.octet, f),
    );
    const before = files.map((f) => fs.readFileSync(f, "utf8"));
    const history = unitState(NODE.octet, "rke2-server.service").history;
    requests.length = 0;
    const state = await startOnNode("update", inputs({ url: MIRROR, caFile: ca }, UPGRADE));
    assert.deepEqual(state.lastChanges, []);
    assert.equal(state.installedVersion, UPGRADE);
    assert.equal(state.dataDir, DATA_DIR);
    assert.deepEqual(requests, []);
    assert.deepEqual(
      files.map((f) => fs.readFileSync(f, "utf8")),
      before,
    );
    assert.deepEqual(unitState(NODE.octet, "rke2-server.service").history, history);
    assert.ok(
      !fs.existsSync(nodeFile(NODE.octet, `/var/lib/rke2-remediation/artifacts/${UPGRADE}`)),
    );
  });
});
