/**
 * The read of a server's admin kubeconfig (components/rke2-cluster/kubeconfig.ts) over real SSH
 * against a lab node: the file at RKE2's path, the same path as the symlink RKE2 makes when
 * `write-kubeconfig` names another file, a missing file, and a refresh after the file changed.
 * The files are written by the test in RKE2's layout; the full path through RKE2's stand-in and
 * its real kube-apiserver is the e2e tier's (test/e2e/local-stack.test.ts).
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { componentFile } from "../../components/assets";
import {
  kubeconfigProvider,
  KubeconfigState,
  RKE2_KUBECONFIG_PATH,
} from "../../components/rke2-cluster/kubeconfig";
import { nodeConnection, nodeFile, stepKey } from "./lab";

const NODE = 30;
const onHost = nodeFile(NODE, RKE2_KUBECONFIG_PATH);
/** Where a `write-kubeconfig` setting would put the file, inside the node. */
const ELSEWHERE = "/etc/rancher/rke2/elsewhere/admin.yaml";

function state(): KubeconfigState {
  const { privateKey: _key, ...connection } = nodeConnection(NODE);
  return {
    node: "sza122030.local",
    connection,
    ...stepKey(),
    script: componentFile(
      path.join(__dirname, "../../components/rke2-cluster"),
      "read-kubeconfig.sh",
    ),
    apiHost: "192.168.122.30",
  };
}

function kubeconfig(server: string, user: string): string {
  return YAML.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "default", cluster: { server, "certificate-authority-data": "Q0E=" } }],
    contexts: [{ name: "default", context: { cluster: "default", user: "default" } }],
    "current-context": "default",
    users: [{ name: "default", user: { "client-key-data": user } }],
  });
}

describe("the admin kubeconfig read from a server (lab host)", function () {
  this.timeout(120000);
  let kept: string | undefined;

  before(() => {
    if (fs.existsSync(onHost)) kept = fs.readFileSync(onHost, "utf8");
  });
  afterEach(() => {
    fs.rmSync(onHost, { force: true });
    fs.rmSync(path.dirname(nodeFile(NODE, ELSEWHERE)), { recursive: true, force: true });
  });
  after(() => {
    if (kept !== undefined) fs.writeFileSync(onHost, kept, { mode: 0o600 });
  });

  it("gives the file with its loopback server pointed at the server's address", async () => {
    fs.mkdirSync(path.dirname(onHost), { recursive: true });
    fs.writeFileSync(onHost, kubeconfig("https://127.0.0.1:6443", "S0VZLTE="), { mode: 0o600 });
    const { id, outs } = await kubeconfigProvider.create!(state());
    assert.equal(id, "sza122030.local/kubeconfig");
    const got = YAML.parse((outs as KubeconfigState).kubeconfig!);
    assert.equal(got.clusters[0].cluster.server, "https://192.168.122.30:6443");
    assert.equal(got.users[0].user["client-key-data"], "S0VZLTE=");
  });

  it("follows the symlink RKE2 makes to the file write-kubeconfig names", async () => {
    const target = nodeFile(NODE, ELSEWHERE);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, kubeconfig("https://127.0.0.1:6443", "S0VZLTI="), { mode: 0o600 });
    fs.mkdirSync(path.dirname(onHost), { recursive: true });
    fs.symlinkSync(ELSEWHERE, onHost);
    const { outs } = await kubeconfigProvider.create!(state());
    const got = YAML.parse((outs as KubeconfigState).kubeconfig!);
    assert.equal(got.users[0].user["client-key-data"], "S0VZLTI=");
  });

  it("refresh reads the file again", async () => {
    fs.mkdirSync(path.dirname(onHost), { recursive: true });
    fs.writeFileSync(onHost, kubeconfig("https://127.0.0.1:6443", "S0VZLTE="), { mode: 0o600 });
    const { outs } = await kubeconfigProvider.create!(state());
    fs.writeFileSync(onHost, kubeconfig("https://127.0.0.1:6443", "S0VZLTM="), { mode: 0o600 });
    const { props } = await kubeconfigProvider.read!("sza122030.local/kubeconfig", outs);
    const got = YAML.parse((props as KubeconfigState).kubeconfig!);
    assert.equal(got.users[0].user["client-key-data"], "S0VZLTM=");
  });

  it("fails naming the server and the path when RKE2 wrote no file", async () => {
    await assert.rejects(
      kubeconfigProvider.create!(state()),
      /kubeconfig of sza122030\.local: \/etc\/rancher\/rke2\/rke2\.yaml on 192\.168\.122\.30 is missing; RKE2 writes it when rke2-server starts/,
    );
  });
});
