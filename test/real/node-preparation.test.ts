/**
 * Node preparation against a lab node: real sshd, real iptables with Rocky's rules and cluster
 * chains, and the systemctl test double recording unit state.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { componentFile } from "../../components/assets";
import {
  nodePreparationProvider,
  NodePreparationState,
} from "../../components/node-preparation/provider";
import {
  nodeScriptParams,
  parseNodeFacts,
  renderUnmanagedDevicesConfig,
} from "../../components/node-preparation/render";
import { runScript } from "../../components/ssh/run-script";
import { DEFAULT_UNMANAGED_DEVICES } from "../../components/model";
import {
  parsePortChecks,
  PortCheck,
  preflightProvider,
} from "../../components/node-preparation/preflight";
import {
  inNamespace,
  lab,
  labNs,
  nodeConnection,
  LAB_DIR,
  nodeFile,
  REPO,
  ruleset,
  stepKey,
  unitState,
} from "./lab";

const NM_CONF = "/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf";

function desired(octet: number, bringUpKubeIpvs = false): NodePreparationState {
  const { privateKey: _key, ...connection } = nodeConnection(octet);
  return {
    node: `sza122${String(octet).padStart(3, "0")}.local`,
    connection,
    ...stepKey(),
    script: componentFile(
      path.join(__dirname, "../../components/node-preparation"),
      "prepare-node.sh",
    ),
    bringUpKubeIpvs,
    firewallServicesDisabled: true,
    nmCloudSetupDisabled: true,
    rejectRulesAbsent: true,
    networkManagerConfig: renderUnmanagedDevicesConfig(DEFAULT_UNMANAGED_DEVICES),
    nodeIp: `192.168.122.${octet}`,
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

/** The unit directory the systemctl double keeps for a unit on a node. */
function unitDir(octet: number, unit: string): string {
  return nodeFile(octet, `/var/lib/systemctl-double/units/${unit}`);
}

/** Adds a unit to a node's systemctl double, enabled and running unless told otherwise. */
function addUnit(
  octet: number,
  unit: string,
  state: { enabled?: boolean; active?: boolean; files?: Record<string, string> } = {},
): void {
  const dir = unitDir(octet, unit);
  fs.mkdirSync(dir, { recursive: true });
  if (state.enabled ?? true) fs.writeFileSync(path.join(dir, "enabled"), "");
  if (state.active ?? true) fs.writeFileSync(path.join(dir, "active"), "");
  for (const [name, text] of Object.entries(state.files ?? {})) {
    fs.writeFileSync(path.join(dir, name), text);
  }
}

const firewallCmdOf = (octet: number) => nodeFile(octet, "/usr/local/bin/firewall-cmd");

/**
 * A node as the seeds found it, plus firewalld running at `version` with the given runtime direct
 * rules, the firewall-cmd stand-in, and nm-cloud-setup's service running as well as its timer.
 */
function withFirewalld(octet: number, version: string, directRules = ""): void {
  assert.equal(lab("reset-node", String(octet)).status, 0);
  const firewallCmd = firewallCmdOf(octet);
  fs.mkdirSync(path.dirname(firewallCmd), { recursive: true });
  fs.copyFileSync(path.join(__dirname, "../../../test/lab/node-files/firewall-cmd"), firewallCmd);
  fs.chmodSync(firewallCmd, 0o755);
  addUnit(octet, "firewalld.service", {
    files: { version: `${version}\n`, ...(directRules ? { "direct-rules": directRules } : {}) },
  });
  addUnit(octet, "nm-cloud-setup.service");
}

function removeFirewalld(octet: number): void {
  fs.rmSync(firewallCmdOf(octet), { force: true });
  fs.rmSync(nodeFile(octet, "/etc/firewalld"), { recursive: true, force: true });
  assert.equal(lab("reset-node", String(octet)).status, 0);
}

const clusterChains = (rules: string[]) =>
  rules.filter((r) => /KUBE-|cali-/.test(r) && !r.startsWith(":"));

describe("firewalld and nm-cloud-setup (real iptables; firewalld and systemd stand-ins)", function () {
  this.timeout(120000);
  const provider = nodePreparationProvider;

  describe("firewalld whose stop skips iptables (2.0.0, no direct rules)", () => {
    const NODE = 21;
    let rulesBefore: string[];
    let outs: NodePreparationState;
    before(async () => {
      withFirewalld(NODE, "2.0.0");
      rulesBefore = ruleset(NODE);
      outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
    });
    after(() => removeFirewalld(NODE));

    it("disables and stops firewalld", () => {
      const fw = unitState(NODE, "firewalld.service");
      assert.deepEqual([fw.enabled, fw.active, fw.history], [false, false, ["stop"]]);
      assert.equal(outs.firewalldRunning, false);
      assert.ok(
        outs.lastChanges?.some((c) => c.startsWith("disabled and stopped firewalld.service")),
        JSON.stringify(outs.lastChanges),
      );
    });

    it("keeps kube-proxy's and Calico's iptables rules", () => {
      assert.ok(clusterChains(rulesBefore).length > 0, "the lab node should carry cluster chains");
      assert.deepEqual(clusterChains(ruleset(NODE)), clusterChains(rulesBefore));
    });

    it("disables and stops nm-cloud-setup's timer and service", () => {
      for (const unit of ["nm-cloud-setup.timer", "nm-cloud-setup.service"]) {
        const s = unitState(NODE, unit);
        assert.deepEqual([s.enabled, s.active, s.history], [false, false, ["stop"]], unit);
      }
      assert.equal(outs.nmCloudSetupDisabled, true);
    });

    it("a second run changes nothing and stops nothing again", async () => {
      const again = (await provider.update!("id", outs, desired(NODE)))
        .outs as NodePreparationState;
      assert.deepEqual(again.lastChanges, []);
      assert.equal(again.rebootRequired, false);
      assert.deepEqual(unitState(NODE, "firewalld.service").history, ["stop"]);
      assert.deepEqual(unitState(NODE, "nm-cloud-setup.timer").history, ["stop"]);
    });

    it("refresh sees nm-cloud-setup.timer running again and the next apply stops it", async () => {
      assert.equal(
        await runScript(nodeConnection(NODE), "systemctl start nm-cloud-setup.timer").then(
          (r) => r.exitCode,
        ),
        0,
      );
      const observed = (await provider.read!("id", desired(NODE))).props as NodePreparationState;
      assert.equal(observed.nmCloudSetupDisabled, false);
      assert.equal((await provider.diff!("id", observed, desired(NODE))).changes, true);
      await provider.update!("id", observed, desired(NODE));
      assert.equal(unitState(NODE, "nm-cloud-setup.timer").active, false);
    });
  });

  describe("firewalld whose stop would flush iptables", () => {
    const NODE = 22;
    after(() => removeFirewalld(NODE));

    for (const [label, version, direct] of [
      ["1.3.4 (firewalld/firewalld#863 unfixed)", "1.3.4", ""],
      ["2.0.0 with a direct rule", "2.0.0", "ipv4 filter INPUT 0 -s 10.9.9.9 -j DROP\n"],
    ]) {
      it(`${label}: disables it, leaves it running, keeps every rule and says why`, async () => {
        withFirewalld(NODE, version, direct);
        const before = ruleset(NODE);
        const outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
        const fw = unitState(NODE, "firewalld.service");
        assert.deepEqual([fw.enabled, fw.active, fw.history], [false, true, []]);
        assert.equal(outs.firewalldRunning, true);
        assert.ok(
          outs.lastChanges?.some((c) => /left it running until the next reboot: .*flush/.test(c)),
          JSON.stringify(outs.lastChanges),
        );
        assert.deepEqual(clusterChains(ruleset(NODE)), clusterChains(before));
      });
    }

    it("1.3.4 with CleanupOnExit=no: stops it, since its stop then removes nothing", async () => {
      withFirewalld(NODE, "1.3.4");
      const conf = nodeFile(NODE, "/etc/firewalld/firewalld.conf");
      fs.mkdirSync(path.dirname(conf), { recursive: true });
      fs.writeFileSync(conf, "DefaultZone=public\nCleanupOnExit=no\n");
      const before = ruleset(NODE);
      const outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
      const fw = unitState(NODE, "firewalld.service");
      assert.deepEqual([fw.enabled, fw.active, fw.history], [false, false, ["stop"]]);
      assert.equal(outs.firewalldRunning, false);
      assert.deepEqual(clusterChains(ruleset(NODE)), clusterChains(before));
      fs.rmSync(path.dirname(conf), { recursive: true, force: true });
    });

    it("(the stand-in knows the danger: stopping that firewalld by hand flushes the cluster chains)", async () => {
      withFirewalld(NODE, "1.3.4");
      assert.ok(clusterChains(ruleset(NODE)).length > 0);
      const r = await runScript(nodeConnection(NODE), "systemctl stop firewalld.service");
      assert.equal(r.exitCode, 0, r.stderr);
      assert.deepEqual(clusterChains(ruleset(NODE)), []);
    });
  });

  describe("firewalld kept (nodePreparation.firewalld: keep)", () => {
    const NODE = 21;
    const keep = (): NodePreparationState => ({ ...desired(NODE), keepFirewalld: true });
    let rulesBefore: string[];
    let outs: NodePreparationState;
    before(async () => {
      withFirewalld(NODE, "2.0.0");
      rulesBefore = ruleset(NODE);
      outs = (await provider.create!(keep())).outs as NodePreparationState;
    });
    after(() => removeFirewalld(NODE));

    it("leaves firewalld enabled and running", () => {
      const fw = unitState(NODE, "firewalld.service");
      assert.deepEqual([fw.enabled, fw.active, fw.history], [true, true, []]);
      assert.equal(outs.firewalldRunning, true);
      assert.equal(outs.firewallServicesDisabled, true);
      assert.ok(
        outs.lastChanges?.every((c) => !c.includes("firewalld")),
        JSON.stringify(outs.lastChanges),
      );
    });

    it("still disables iptables.service, and leaves the REJECT rules to the running firewalld", () => {
      assert.equal(unitState(NODE, "iptables.service").enabled, false);
      assert.ok(rulesBefore.some(isReject), "the lab node should carry Rocky's REJECT rules");
      assert.deepEqual(ruleset(NODE).filter(isReject), rulesBefore.filter(isReject));
      assert.equal(outs.rejectRulesAbsent, true);
    });

    it("a second run changes nothing", async () => {
      const again = (await provider.update!("id", outs, keep())).outs as NodePreparationState;
      assert.deepEqual(again.lastChanges, []);
      assert.equal((await provider.diff!("id", again, keep())).changes, false);
    });

    it("the ports preflight from a peer names each port the kept firewall rejects", async () => {
      const { privateKey: _key, ...connection } = nodeConnection(20);
      const check = {
        node: "sza122020.local",
        connection,
        ...stepKey(),
        script: componentFile(
          path.join(__dirname, "../../components/node-preparation"),
          "preflight-ports.sh",
        ),
        peers: [],
        ports: [],
        targets: [{ peer: `192.168.122.${NODE}`, ports: [9345, 10250] }],
        blocked: [],
      };
      await assert.rejects(
        preflightProvider.create!(check),
        (err: Error) =>
          err.message.includes("sza122020.local -> 192.168.122.21:9345 prohibited") &&
          err.message.includes("sza122020.local -> 192.168.122.21:10250 prohibited") &&
          err.message.includes("nodePreparation.firewalld: keep"),
      );
      // Once the operators open them (here: the REJECT rules gone), the preflight passes.
      for (const rule of ruleset(NODE).filter(isReject)) {
        const args = rule.replace(/^-A /, "-D ").split(" ");
        assert.equal(inNamespace(labNs(`n${NODE}`), ["iptables", ...args]).status, 0, rule);
      }
      const { outs: passed } = await preflightProvider.create!(check);
      assert.deepEqual((passed as { blocked: string[] }).blocked, []);
    });

    it("preview warns before disabling a firewalld the state shows running, and not when it is kept", async () => {
      const warnings: string[] = [];
      const originalWarn = pulumi.log.warn;
      (pulumi.log as { warn: typeof pulumi.log.warn }).warn = async (msg: string) => {
        warnings.push(msg);
      };
      try {
        const found = { ...outs, firewallServicesDisabled: false };
        await provider.diff!("id", found, keep());
        assert.deepEqual(warnings, []);
        assert.equal((await provider.diff!("id", found, desired(NODE))).changes, true);
        assert.equal(warnings.length, 1);
        assert.match(
          warnings[0],
          /node sza122021\.local: firewalld\.service runs there; up disables it/,
        );
      } finally {
        (pulumi.log as { warn: typeof pulumi.log.warn }).warn = originalWarn;
      }
    });
  });

  describe("rebootRequired", () => {
    const NODE = 31;
    const warnings: string[] = [];
    const originalWarn = pulumi.log.warn;
    before(() => {
      assert.equal(lab("reset-node", String(NODE)).status, 0);
      (pulumi.log as { warn: typeof pulumi.log.warn }).warn = async (msg: string) => {
        warnings.push(msg);
      };
    });
    after(() => {
      (pulumi.log as { warn: typeof pulumi.log.warn }).warn = originalWarn;
      assert.equal(lab("reset-node", String(NODE)).status, 0);
    });

    it("is false when the drop-in changes on a node without RKE2", async () => {
      const outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
      assert.ok(outs.lastChanges?.some((c) => c.startsWith(`wrote ${NM_CONF}, adding `)));
      assert.equal(outs.rebootRequired, false);
      assert.deepEqual(warnings, []);
    });

    it("is true, with a warning naming the node, when the drop-in changes while rke2-server runs", async () => {
      assert.equal(lab("reset-node", String(NODE)).status, 0);
      addUnit(NODE, "rke2-server.service");
      const outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
      assert.equal(outs.rebootRequired, true);
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      assert.match(
        warnings[0],
        /^node sza122031\.local: warning: .*already has RKE2 and a device it adds exists; reboot the node/,
      );
      const rke2 = unitState(NODE, "rke2-server.service");
      assert.equal(rke2.active, true, "RKE2 was stopped");
      assert.deepEqual(rke2.history, [], "RKE2 was touched");
    });

    it("stays true on a second run and on refresh until the node has booted again, with nothing changed and no new warning", async () => {
      const again = (await provider.update!("id", desired(NODE), desired(NODE)))
        .outs as NodePreparationState;
      assert.equal(again.rebootRequired, true);
      assert.deepEqual(again.lastChanges, []);
      assert.equal(warnings.length, 1);
      const refreshed = (await provider.read!("id", again)).props as NodePreparationState;
      assert.equal(refreshed.rebootRequired, true);
      // The drift check keeps failing on it.
      assert.equal((await provider.diff!("id", refreshed, desired(NODE))).changes, true);
    });

    it("is false once the node has booted since (the owed reboot was recorded in another boot)", async () => {
      // The lab's hosts share one kernel, so a reboot shows as the record naming another boot.
      const pending = nodeFile(NODE, "/var/lib/rke2-remediation/reboot-pending");
      const lines = fs.readFileSync(pending, "utf8").split("\n");
      fs.writeFileSync(
        pending,
        ["00000000-0000-0000-0000-000000000000", ...lines.slice(1)].join("\n"),
      );
      const outs = (await provider.update!("id", desired(NODE), desired(NODE)))
        .outs as NodePreparationState;
      assert.equal(outs.rebootRequired, false);
      assert.ok(!fs.existsSync(pending));
      assert.equal((await provider.diff!("id", outs, desired(NODE))).changes, false);
    });

    it("never reboots: the node's systemctl saw no reboot", () => {
      const calls = fs.readFileSync(nodeFile(NODE, "/var/lib/systemctl-double/calls.log"), "utf8");
      assert.doesNotMatch(calls, /\b(reboot|kexec|poweroff)\b/);
    });
  });
  describe("an operator's own NetworkManager config (seed 003's hand-written drop-in)", () => {
    const NODE = 31;
    // What seed 003's operators wrote on each server, word for word.
    const SEED_003 =
      "[keyfile]\nunmanaged-devices=interface-name:kube-ipvs0;interface-name:cali*;interface-name:vxlan.calico;interface-name:tunl*\n";
    const confDir = () => path.dirname(nodeFile(NODE, NM_CONF));
    const kept = () =>
      fs.readdirSync(confDir()).filter((f) => /^99-rke2-unmanaged\.conf\.\d{8}T\d{6}Z$/.test(f));
    const nodeNs = labNs(`n${NODE}`);
    const warnings: string[] = [];
    const originalWarn = pulumi.log.warn;
    beforeEach(() => {
      assert.equal(lab("reset-node", String(NODE)).status, 0);
      addUnit(NODE, "rke2-server.service");
      warnings.length = 0;
      (pulumi.log as { warn: typeof pulumi.log.warn }).warn = async (msg: string) => {
        warnings.push(msg);
      };
    });
    afterEach(() => {
      (pulumi.log as { warn: typeof pulumi.log.warn }).warn = originalWarn;
      inNamespace(nodeNs, ["ip", "link", "del", "flannel.1"]);
    });
    after(() => assert.equal(lab("reset-node", String(NODE)).status, 0));

    it("keeps the operators' entries, adds the missing ones, keeps the old file, and owes no reboot where no added device exists", async () => {
      fs.writeFileSync(nodeFile(NODE, NM_CONF), SEED_003);
      const outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
      const file = fs.readFileSync(nodeFile(NODE, NM_CONF), "utf8");
      assert.equal(
        file,
        "[keyfile]\nunmanaged-devices+=interface-name:kube-ipvs0;interface-name:cali*;interface-name:vxlan.calico;interface-name:tunl*;" +
          "interface-name:vxlan-v6.calico;interface-name:flannel*;interface-name:wireguard.cali;interface-name:wg-v6.cali\n",
      );
      assert.equal(kept().length, 1, fs.readdirSync(confDir()).join(" "));
      assert.equal(fs.readFileSync(path.join(confDir(), kept()[0]), "utf8"), SEED_003);
      assert.equal(outs.rebootRequired, false);
      assert.deepEqual(warnings, []);
      assert.equal((await provider.diff!("id", outs, desired(NODE))).changes, false);
    });

    it("owes a reboot when a device it adds exists on the node (flannel.1)", async () => {
      fs.writeFileSync(nodeFile(NODE, NM_CONF), SEED_003);
      const link = inNamespace(nodeNs, [
        "ip",
        "link",
        "add",
        "flannel.1",
        "type",
        "veth",
        "peer",
        "name",
        "fl-peer",
      ]);
      assert.equal(link.status, 0, link.stderr);
      const outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
      assert.equal(outs.rebootRequired, true);
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      assert.match(warnings[0], /a device it adds exists; reboot the node/);
    });

    it("leaves a file that already lists every device alone: not rewritten, not kept, no reload", async () => {
      const own =
        renderUnmanagedDevicesConfig([...DEFAULT_UNMANAGED_DEVICES, "eth1"]).replace("+=", "=") +
        "\n";
      fs.writeFileSync(nodeFile(NODE, NM_CONF), own);
      const outs = (await provider.create!(desired(NODE))).outs as NodePreparationState;
      assert.equal(fs.readFileSync(nodeFile(NODE, NM_CONF), "utf8"), own);
      assert.deepEqual(kept(), []);
      assert.deepEqual(unitState(NODE, "NetworkManager.service").history, []);
      assert.equal(outs.rebootRequired, false);
      assert.equal((await provider.diff!("id", outs, desired(NODE))).changes, false);
    });

    it("keeps an operator's storage NIC and the other keys of the file", async () => {
      fs.writeFileSync(
        nodeFile(NODE, NM_CONF),
        "[main]\ndns=none\n[keyfile]\nunmanaged-devices=interface-name:eth1\n# theirs\n",
      );
      await provider.create!(desired(NODE));
      const file = fs.readFileSync(nodeFile(NODE, NM_CONF), "utf8");
      assert.match(
        file,
        /^\[main\]\ndns=none\n\[keyfile\]\nunmanaged-devices\+=interface-name:eth1;interface-name:kube-ipvs0;/,
      );
      assert.match(file, /# theirs\n$/);
    });

    it("appends where an earlier file sets the key, so its entries keep their effect", async () => {
      fs.writeFileSync(
        path.join(confDir(), "50-storage-nic.conf"),
        "[keyfile]\nunmanaged-devices=interface-name:eth2\n",
      );
      const full =
        renderUnmanagedDevicesConfig(DEFAULT_UNMANAGED_DEVICES).replace("+=", "=") + "\n";
      fs.writeFileSync(nodeFile(NODE, NM_CONF), full);
      const read = (await provider.read!("id", desired(NODE))).props as NodePreparationState;
      assert.deepEqual(read.networkManagerReplaces, [
        path.posix.join("/etc/NetworkManager/conf.d", "50-storage-nic.conf"),
      ]);
      assert.equal((await provider.diff!("id", read, desired(NODE))).changes, true);
      const outs = (await provider.update!("id", read, desired(NODE))).outs as NodePreparationState;
      assert.equal(fs.readFileSync(nodeFile(NODE, NM_CONF), "utf8"), full.replace("=", "+="));
      assert.deepEqual(outs.networkManagerReplaces, []);
      assert.equal(outs.rebootRequired, false, "nothing was added");
    });

    it("refuses, changing nothing, where a later file replaces the key, and names it", async () => {
      fs.writeFileSync(
        path.join(confDir(), "zz-site.conf"),
        "[keyfile]\nunmanaged-devices=interface-name:eth3\n",
      );
      await assert.rejects(
        provider.create!(desired(NODE)),
        /zz-site\.conf sets unmanaged-devices= after .*99-rke2-unmanaged\.conf.*unmanaged-devices\+=/,
      );
      assert.ok(!fs.existsSync(nodeFile(NODE, NM_CONF)));
      assert.equal(unitState(NODE, "iptables.service").enabled, true, "something was changed");
    });
  });

  describe("host checks before any change (kubespray's preinstall checks that apply to RKE2)", () => {
    const NODE = 31;
    const resolv = nodeFile(NODE, "/etc/resolv.conf");
    let resolvText: string;
    before(() => {
      assert.equal(lab("reset-node", String(NODE)).status, 0);
      resolvText = fs.readFileSync(resolv, "utf8");
    });
    after(() => {
      fs.writeFileSync(resolv, resolvText);
      assert.equal(lab("reset-node", String(NODE)).status, 0);
    });

    it("refuses a host that does not have the stack's address, changing nothing", async () => {
      const rules = ruleset(NODE);
      await assert.rejects(
        provider.create!({ ...desired(NODE), nodeIp: "192.168.122.99" }),
        /nothing was changed: the stack's ip 192\.168\.122\.99 is not an address of this host \(it has: .*192\.168\.122\.31/,
      );
      assert.deepEqual(ruleset(NODE), rules, "the REJECT rules went before the check");
      assert.equal(unitState(NODE, "iptables.service").enabled, true);
    });

    it("reports memory and CPUs below what RKE2 needs, as the host has them", async () => {
      const r = await runScript(nodeConnection(NODE), desired(NODE).script, {
        params: {
          ...nodeScriptParams("read", desired(NODE)),
          MIN_MEMORY_MIB: String(1024 * 1024 * 1024),
          MIN_CPUS: "4096",
        },
      });
      assert.equal(r.exitCode, 0, r.stderr);
      const mib = Math.floor(
        Number(/^MemTotal:\s+(\d+)/m.exec(fs.readFileSync("/proc/meminfo", "utf8"))![1]) / 1024,
      );
      const findings = parseNodeFacts(r.stdout).hostFindings.join("\n");
      assert.match(
        findings,
        new RegExp(`^it has ${mib} MiB of memory, less than the 4 GB RKE2 needs`, "m"),
      );
      assert.match(
        findings,
        new RegExp(`^it has ${os.cpus().length} CPU\\(s\\), fewer than the 4096 RKE2 needs$`, "m"),
      );
    });

    it("refuses a host whose resolv.conf names no nameserver; refresh reports it until it has one", async () => {
      const ok = (await provider.create!(desired(NODE))).outs as NodePreparationState;
      assert.deepEqual(ok.hostFindings, []);
      fs.writeFileSync(resolv, "search local\n");
      const found = (await provider.read!("id", ok)).props as NodePreparationState;
      assert.match(String(found.hostFindings), /resolv\.conf names no nameserver/);
      assert.equal((await provider.diff!("id", found, desired(NODE))).changes, true);
      await assert.rejects(provider.update!("id", found, desired(NODE)), /names no nameserver/);
      fs.writeFileSync(resolv, resolvText);
      const fixed = (await provider.update!("id", found, desired(NODE)))
        .outs as NodePreparationState;
      assert.deepEqual(fixed.hostFindings, []);
    });
  });

  describe("RKE2's cis profile: the host steps RKE2 checks at start", () => {
    const NODE = 31;
    const PARAMS = [
      "vm/overcommit_memory",
      "vm/panic_on_oom",
      "kernel/panic",
      "kernel/panic_on_oops",
    ];
    const machine = () => PARAMS.map((p) => fs.readFileSync(`/proc/sys/${p}`, "utf8").trim());
    const cis = (): NodePreparationState => ({
      ...desired(NODE),
      rke2Profile: "cis",
      etcdUser: true,
    });
    let machineBefore: string[];
    /** The lab's RKE2 stand-in started on the node, as a joining server with no token: past the
     * profile checks it stops at once, asking for the token. */
    async function startRke2(profileLines: string) {
      const config = nodeFile(NODE, "/etc/rancher/rke2/config.yaml");
      fs.mkdirSync(path.dirname(config), { recursive: true });
      fs.writeFileSync(
        config,
        `${profileLines}server: https://192.168.122.20:9345\nnode-ip: 192.168.122.${NODE}\n`,
      );
      const r = await runScript(
        nodeConnection(NODE),
        `timeout 30 bash ${REPO}/test/lab/rke2-standin/rke2-server 2>&1; echo "exit=$?"`,
      );
      return r.stdout;
    }
    before(() => {
      assert.equal(lab("reset-node", String(NODE)).status, 0);
      machineBefore = machine();
      // Rocky's defaults on the node (its own copy of the machine-wide values; see the lab).
      for (const [param, value] of [
        ["kernel.panic", "0"],
        ["vm.overcommit_memory", "0"],
      ])
        fs.writeFileSync(path.join(LAB_DIR, "nodes", `n${NODE}`, "proc-sys", param), `${value}\n`);
    });
    after(() => assert.equal(lab("reset-node", String(NODE)).status, 0));

    it("RKE2 (the stand-in) refuses to start on the node as found: kernel parameters, then the etcd user", async () => {
      const out = await startRke2("profile: cis\n");
      assert.match(
        out,
        /level=fatal msg="invalid kernel parameter value [\s\S]*kernel\.panic=0 - expected 10\n/,
      );
      assert.match(out, /exit=1/);
      assert.match(await startRke2("profile: etcd\n"), /missing required: user: unknown user etcd/);
    });

    it("prepares the node: the sysctl file, the kernel's values and the etcd user and group", async () => {
      const outs = (await provider.create!(cis())).outs as NodePreparationState;
      assert.deepEqual(outs.profileFindings, []);
      assert.equal(
        fs.readFileSync(nodeFile(NODE, "/etc/sysctl.d/60-rke2-cis.conf"), "utf8"),
        "vm.panic_on_oom=0\nvm.overcommit_memory=1\nkernel.panic=10\nkernel.panic_on_oops=1\n",
      );
      const r = await runScript(
        nodeConnection(NODE),
        "sysctl -n vm.panic_on_oom vm.overcommit_memory kernel.panic kernel.panic_on_oops; id -un etcd; getent group etcd | cut -d: -f1",
      );
      assert.deepEqual(r.stdout.trim().split("\n"), ["0", "1", "10", "1", "etcd", "etcd"]);
      assert.match(
        fs.readFileSync(nodeFile(NODE, "/etc/passwd"), "utf8"),
        /^etcd:x:\d+:\d+:etcd user:[^:]*:\/sbin\/nologin$/m,
      );
      // The machine's own kernel parameters were never touched.
      assert.deepEqual(machine(), machineBefore);
    });

    it("RKE2 (the stand-in) then passes its profile checks", async () => {
      const out = await startRke2("profile: cis\n");
      assert.doesNotMatch(out, /invalid kernel parameter|missing required/);
      assert.match(out, /RKE2_TOKEN is required to join a cluster/);
    });

    it("a second run changes nothing", async () => {
      const again = (await provider.update!("id", cis(), cis())).outs as NodePreparationState;
      assert.deepEqual(
        (again.lastChanges ?? []).filter((c) => /etcd|sysctl|60-rke2-cis/.test(c)),
        [],
      );
    });

    it("refresh sees a kernel parameter set back by hand, and the next apply sets it again", async () => {
      assert.equal(
        (await runScript(nodeConnection(NODE), "sysctl -q -w kernel.panic=0")).exitCode,
        0,
      );
      const found = (await provider.read!("id", cis())).props as NodePreparationState;
      assert.deepEqual(found.profileFindings, ["kernel.panic is 0, the cis profile needs 10"]);
      assert.equal((await provider.diff!("id", found, cis())).changes, true);
      const fixed = (await provider.update!("id", found, cis())).outs as NodePreparationState;
      assert.deepEqual(fixed.profileFindings, []);
      assert.deepEqual(machine(), machineBefore);
    });
  });
});
