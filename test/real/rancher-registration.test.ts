/**
 * Node registration into a Rancher downstream cluster, through the product's provider and script
 * over real SSH to lab nodes .31 and .30, against the lab's Rancher stand-in on .20:443 (HTTPS,
 * lab CA; ai-ear.cn resolved by the libvirt network's dnsmasq). Seed 000: a node registered
 * before the control plane is in gets no plan; the same registration converges once it is.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import {
  rancherCaChecksum,
  rancherNodeCommand,
} from "../../components/rancher-cluster/registration";
import {
  NodeRegistrationState,
  nodeRegistrationProvider,
} from "../../components/rancher-cluster/provider";
import { pinnedTarget } from "../../components/ssh/run-script";
import { rancherApi } from "../lab/rancher-standin/api-client";
import {
  digA,
  handAddDnsHost,
  handDeleteDnsHost,
  inNamespace,
  lab,
  LAB_DIR,
  labNs,
  nodeConnection,
  nodeFile,
  unitState,
} from "./lab";

const CA = fs.readFileSync(path.join(LAB_DIR, "rancher", "ca.pem"), "utf8");
const API_TOKEN = fs.readFileSync(path.join(LAB_DIR, "rancher", "api-token"), "utf8").trim();
const SERVER = "https://ai-ear.cn";
const FIRST = { octet: 31, name: "sza122031.local", roles: ["etcd", "controlplane"] };
const WORKER = { octet: 30, name: "sza122030.local", roles: ["worker"] };
const ALLOW_HTTPS = ["INPUT", "-p", "tcp", "--dport", "443", "-j", "ACCEPT"];

/** A call to the Rancher stand-in's API on .20, verified against the lab CA. */
async function rancherApiCall(method: string, route: string, body?: unknown) {
  const target = { apiUrl: SERVER, ca: CA, token: API_TOKEN, connectTo: "192.168.122.20" };
  return (await rancherApi(target, method, route, body)).json;
}

describe("Rancher node registration over SSH (Rancher stand-in)", function () {
  this.timeout(120000);
  let cluster: { id: string; registrationToken: string };
  let addedRecord = false;

  const state = (
    node: typeof FIRST,
    overrides: Partial<NodeRegistrationState> = {},
  ): NodeRegistrationState => ({
    node: node.name,
    nodeIp: `192.168.122.${node.octet}`,
    cluster: "seed000",
    roles: node.roles,
    connection: pinnedTarget(nodeConnection(node.octet)),
    sshPrivateKey: nodeConnection(node.octet).privateKey,
    registrationCommand: rancherNodeCommand({
      serverUrl: SERVER,
      token: cluster.registrationToken,
      caChecksum: rancherCaChecksum(CA),
      insecure: false,
      shell: "sh",
    }),
    rancherUrl: SERVER,
    apiToken: API_TOKEN,
    insecure: false,
    caCertificate: CA,
    caChecksum: rancherCaChecksum(CA),
    rancherHost: "ai-ear.cn",
    script: componentFile(
      path.join(__dirname, "../../components/rancher-cluster"),
      "register-node.sh",
    ),
    timeoutSeconds: 30,
    pollSeconds: 1,
    ...overrides,
  });

  before(async () => {
    for (const node of [FIRST, WORKER])
      assert.equal(lab("reset-node", String(node.octet)).status, 0);
    // Rancher's name on the libvirt network, and Rancher's port open on .20 whatever state the
    // other tests left its firewall in.
    if (!digA("ai-ear.cn").includes("192.168.122.20")) {
      handAddDnsHost("192.168.122.20", "ai-ear.cn");
      addedRecord = true;
    }
    assert.equal(inNamespace(labNs("n20"), ["iptables", "-I", ...ALLOW_HTTPS]).status, 0);
    cluster = (await rancherApiCall("POST", "/v3/clusters", {
      name: `seed000-${Date.now()}`,
    })) as typeof cluster;
    assert.match(cluster.id, /^c-m-/);
  });

  after(() => {
    inNamespace(labNs("n20"), ["iptables", "-D", ...ALLOW_HTTPS]);
    if (addedRecord) handDeleteDnsHost("192.168.122.20");
    for (const node of [FIRST, WORKER]) lab("reset-node", String(node.octet));
  });

  it("refuses a command whose CA checksum is not the pinned CA's, before reaching the node", async () => {
    const other = rancherCaChecksum(CA.replace("BEGIN", "BEGIN "));
    await assert.rejects(
      nodeRegistrationProvider.create!(state(FIRST, { caChecksum: other })),
      (err: Error) => {
        assert.match(err.message, /pins CA checksum .* but rancher\.caCertificate has checksum/);
        assert.ok(!err.message.includes(cluster.registrationToken), "the token is in the error");
        return true;
      },
    );
    assert.equal(fs.existsSync(nodeFile(FIRST.octet, "/etc/rancher/agent/config.yaml")), false);
  });

  it("a worker registered before the first node gets no plan: the wait times out and says what to do", async () => {
    await assert.rejects(
      nodeRegistrationProvider.create!(state(WORKER, { timeoutSeconds: 4 })),
      (err: Error) => {
        assert.match(
          err.message,
          /node sza122030\.local: rke2-agent is not active 4 s after registration/,
        );
        assert.match(err.message, /run pulumi up again/);
        assert.ok(!err.message.includes(cluster.registrationToken), "the token is in the error");
        return true;
      },
    );
    assert.equal(unitState(WORKER.octet, "rancher-system-agent.service").active, true);
    assert.equal(unitState(WORKER.octet, "rke2-agent.service").active, false);
  });

  it("the first etcd + control-plane node registers, gets its plan, and the cluster turns active", async () => {
    const result = await nodeRegistrationProvider.create!(state(FIRST));
    assert.equal((result.outs as NodeRegistrationState).registered, true);
    assert.equal(unitState(FIRST.octet, "rke2-server.service").active, true);
    const view = await rancherApiCall("GET", `/v3/clusters/${cluster.id}`);
    assert.equal(view.state, "active");
    // The node trusts Rancher's CA from the stack: the agent's calls verify the certificate.
    assert.equal(
      fs
        .readFileSync(
          path.join(LAB_DIR, "nodes", `n${FIRST.octet}`, "ca-anchors", "rancher-ai-ear.cn.crt"),
          "utf8",
        )
        .trim(),
      CA.trim(),
    );
  });

  it("re-running the worker's registration converges without registering it again", async () => {
    const config = nodeFile(WORKER.octet, "/etc/rancher/agent/config.yaml");
    const before = fs.statSync(config).mtimeMs;
    await nodeRegistrationProvider.create!(state(WORKER));
    assert.equal(fs.statSync(config).mtimeMs, before, "the installer ran again");
    assert.equal(unitState(WORKER.octet, "rke2-agent.service").active, true);
  });

  it("refresh reports a node whose agent registration was removed", async () => {
    const registered = await nodeRegistrationProvider.read!(
      `seed000/${WORKER.name}`,
      state(WORKER),
    );
    assert.equal((registered.props as NodeRegistrationState).registered, true);
    fs.rmSync(nodeFile(WORKER.octet, "/etc/rancher/agent/config.yaml"));
    const lost = await nodeRegistrationProvider.read!(`seed000/${WORKER.name}`, state(WORKER));
    assert.equal((lost.props as NodeRegistrationState).registered, false);
    const diff = await nodeRegistrationProvider.diff!(
      `seed000/${WORKER.name}`,
      lost.props as NodeRegistrationState,
      state(WORKER),
    );
    assert.equal(diff.changes, true);
  });
});
