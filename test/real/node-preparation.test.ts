/**
 * Node preparation against a lab node: real sshd, real iptables with Rocky's rules and cluster
 * chains, and the systemctl test double recording unit state.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import {
  nodePreparationProvider,
  nodeScriptParams,
  NodePreparationState,
} from "../../components/node-preparation/provider";
import { renderUnmanagedDevicesConfig } from "../../components/node-preparation/render";
import { runScript } from "../../components/ssh/run-script";
import { DEFAULT_UNMANAGED_DEVICES } from "../../infra/config/model";
import { parsePortChecks, PortCheck } from "../../components/node-preparation/preflight";
import { inNamespace, lab, labNs, nodeConnection, nodeFile, ruleset, unitState } from "./lab";

const NM_CONF = "/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf";

function desired(octet: number, bringUpKubeIpvs = false): NodePreparationState {
  const { privateKey, ...connection } = nodeConnection(octet);
  return {
    node: `sza122${String(octet).padStart(3, "0")}.local`,
    connection,
    sshPrivateKey: privateKey,
    script: componentFile(
      path.join(__dirname, "../../components/node-preparation"),
      "prepare-node.sh",
    ),
    bringUpKubeIpvs,
    firewallServicesDisabled: true,
    nmCloudSetupDisabled: true,
    rejectRulesAbsent: true,
    networkManagerConfig: renderUnmanagedDevicesConfig(DEFAULT_UNMANAGED_DEVICES),
  };
}

const isReject = (rule: string) =>
  /-j REJECT --reject-with icmp(6-adm|-host)-prohibited/.test(rule);

describe("node preparation (real sshd and iptables in a lab node)", function () {
  this.timeout(120000);
  const provider = nodePreparationProvider;
  const NODE = 30;
  let before4: string[];
  let before6: string[];
  let outs: NodePreparationState;
  let etcdPeerBefore: PortCheck[];

  /** What node .20 sees connecting to the node's etcd peer and supervisor ports. */
  async function portsFrom20(): Promise<PortCheck[]> {
    const script = componentFile(
      path.join(__dirname, "../../components/node-preparation"),
      "preflight-ports.sh",
    );
    const r = await runScript(nodeConnection(20), script, {
      params: { PEERS: `192.168.122.${NODE}`, PORTS: "2380 9345", CONNECT_TIMEOUT: "3" },
    });
    return parsePortChecks(r.stdout);
  }

  before(async () => {
    for (const octet of [NODE, 31]) assert.equal(lab("reset-node", String(octet)).status, 0);
    etcdPeerBefore = await portsFrom20();
    before4 = ruleset(NODE);
    before6 = ruleset(NODE, "ip6tables");
    assert.ok(before4.some(isReject), "the lab node should start with Rocky's REJECT rules");
    outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
  });

  it("turns host-prohibited etcd peer connections into plain closed ports", async () => {
    assert.deepEqual(
      etcdPeerBefore.map((c) => c.verdict),
      ["prohibited", "prohibited"],
    );
    assert.deepEqual(
      (await portsFrom20()).map((c) => c.verdict),
      ["closed", "closed"],
    );
  });

  it("removes exactly the REJECT rules and keeps kube-proxy's and Calico's", () => {
    assert.deepEqual(
      ruleset(NODE),
      before4.filter((r) => !isReject(r)),
    );
    assert.deepEqual(
      ruleset(NODE, "ip6tables"),
      before6.filter((r) => !isReject(r)),
    );
    assert.ok(ruleset(NODE).some((r) => r.includes("-j cali-INPUT")));
    assert.ok(ruleset(NODE).some((r) => r.startsWith("-A KUBE-POSTROUTING")));
  });

  it("disables iptables.service and ip6tables.service without ever stopping them", () => {
    for (const unit of ["iptables.service", "ip6tables.service"]) {
      const state = unitState(NODE, unit);
      assert.equal(state.enabled, false, `${unit} still enabled`);
      assert.equal(state.active, true, `${unit} was stopped`);
      assert.ok(!state.history.includes("stop"), `${unit} history: ${state.history.join(",")}`);
    }
  });

  it("disables nm-cloud-setup and writes the unmanaged-devices config atomically with mode 0644", () => {
    assert.equal(unitState(NODE, "nm-cloud-setup.service").enabled, false);
    assert.equal(unitState(NODE, "nm-cloud-setup.timer").enabled, false);
    const file = nodeFile(NODE, NM_CONF);
    assert.equal(
      fs.readFileSync(file, "utf8"),
      renderUnmanagedDevicesConfig(DEFAULT_UNMANAGED_DEVICES) + "\n",
    );
    assert.equal(fs.statSync(file).mode & 0o777, 0o644);
    assert.deepEqual(
      fs.readdirSync(path.dirname(file)).filter((f) => f.startsWith("99-rke2-unmanaged.conf.")),
      [],
      "temporary file left behind",
    );
    assert.deepEqual(unitState(NODE, "NetworkManager.service").history, ["reload"]);
  });

  it("leaves kube-ipvs0 down", () => {
    assert.equal(outs.kubeIpvs0, "down");
    assert.doesNotMatch(
      inNamespace(labNs(`n${NODE}`), ["ip", "link", "show", "kube-ipvs0"]).stdout,
      /,UP/,
    );
  });

  it("a second run changes nothing and does not reload NetworkManager again", async () => {
    const again = (await provider.update!("id", outs, desired(NODE))).outs as NodePreparationState;
    assert.deepEqual(again.lastChanges, []);
    assert.deepEqual(unitState(NODE, "NetworkManager.service").history, ["reload"]);
  });

  it("refresh sees iptables.service re-enabled and a REJECT rule back, and the next apply repairs both", async () => {
    const conn = nodeConnection(NODE);
    const broken = await runScript(
      conn,
      "systemctl enable iptables.service && iptables -A INPUT -j REJECT --reject-with icmp-host-prohibited",
    );
    assert.equal(broken.exitCode, 0, broken.stderr);
    const observed = (await provider.read!("id", desired(NODE))).props as NodePreparationState;
    assert.equal(observed.firewallServicesDisabled, false);
    assert.equal(observed.rejectRulesAbsent, false);
    assert.equal((await provider.diff!("id", observed, desired(NODE))).changes, true);
    await provider.update!("id", observed, desired(NODE));
    assert.equal(unitState(NODE, "iptables.service").enabled, false);
    assert.deepEqual(
      ruleset(NODE),
      before4.filter((r) => !isReject(r)),
    );
  });

  it("deleting the resource leaves the host as it is", async () => {
    await provider.delete!("id", outs);
    assert.equal(unitState(NODE, "iptables.service").enabled, false);
    assert.ok(!ruleset(NODE).some(isReject));
  });

  it("a session cut mid-apply leaves no partial file, and the re-run converges", async () => {
    assert.equal(lab("reset-node", String(NODE)).status, 0);
    // Cut the session right after the first change: in the middle of applying.
    const cut = new AbortController();
    const progress: string[] = [];
    await assert.rejects(
      runScript(nodeConnection(NODE), desired(NODE).script, {
        params: nodeScriptParams("apply", desired(NODE)),
        signal: cut.signal,
        onProgress: (line) => {
          progress.push(line);
          if (line.startsWith("changed: ")) cut.abort();
        },
      }),
      /was cut before the script finished/,
    );
    assert.ok(
      progress.some((l) => l.startsWith("changed: ")),
      "the session was cut before any change",
    );
    const conf = path.dirname(nodeFile(NODE, NM_CONF));
    const leftovers = () =>
      fs.existsSync(conf) ? fs.readdirSync(conf).filter((f) => f.includes(".conf.")) : [];
    const after = (await provider.update!("id", outs, desired(NODE))).outs as NodePreparationState;
    assert.equal(after.firewallServicesDisabled && after.rejectRulesAbsent, true);
    assert.equal(
      fs.readFileSync(nodeFile(NODE, NM_CONF), "utf8"),
      renderUnmanagedDevicesConfig(DEFAULT_UNMANAGED_DEVICES) + "\n",
    );
    assert.deepEqual(leftovers(), []);
    assert.deepEqual(
      ruleset(NODE),
      before4.filter((r) => !isReject(r)),
    );
  });

  it("brings kube-ipvs0 up only when asked", async () => {
    const result = (await provider.create!(desired(31, true))).outs as NodePreparationState;
    assert.equal(result.kubeIpvs0, "up");
    assert.ok(result.lastChanges?.includes("set kube-ipvs0 up"));
  });
});
