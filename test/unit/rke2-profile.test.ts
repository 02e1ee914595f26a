import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { validateEnvironment } from "../../infra/config/validate";
import {
  CIS_KERNEL_PARAMETERS,
  cisSysctlText,
  knownProfile,
  profileSettingOf,
} from "../../components/node-preparation/profile";
import { nodeScriptParams, parseNodeFacts } from "../../components/node-preparation/render";
import { nodePreparationProvider } from "../../components/node-preparation/provider";
import { estateModel } from "../support/lab-stack";
import { estateWith, problemsOf, setAt, stackKey } from "./fixtures";

describe("RKE2's profile: the host steps it needs", () => {
  it("reads the profile a node gets from the stack's pass-through settings, the node's own last", () => {
    const model = estateModel();
    const [first, second] = model.nodes;
    const cluster = {
      ...model.management,
      extraConfig: { profile: "etcd" },
      serverConfig: { profile: "cis" },
    };
    assert.equal(profileSettingOf(cluster, first), "cis");
    assert.equal(
      profileSettingOf(cluster, { ...second, extraConfig: { profile: "etcd" } }),
      "etcd",
    );
    assert.equal(profileSettingOf(model.management, first), undefined);
    assert.equal(knownProfile("cis-1.23"), undefined);
  });

  it("refuses a profile the releases do not know, naming the key", () => {
    const problems = problemsOf(estateWith("rke2.serverConfig", { profile: "cis-1.23" }));
    assert.equal(problems.length, 1, JSON.stringify(problems));
    assert.equal(problems[0].key, stackKey("rke2.serverConfig.profile"));
    assert.match(problems[0].message, /not a profile RKE2 knows \(cis, etcd\)/);
  });

  it("refuses profile: cis with protect-kernel-defaults: false, naming the node", () => {
    const raw = setAt(estateWith("rke2.extraConfig", { profile: "cis" }), "nodes[1].extraConfig", {
      "protect-kernel-defaults": false,
    });
    const { problems } = validateEnvironment("lab", raw, { requireSecrets: false });
    assert.deepEqual(
      problems.map((p) => p.key),
      [stackKey("nodes[1]")],
    );
    assert.match(problems[0].message, /protect-kernel-defaults must be true/);
  });

  it("gives the script the release's rke2-cis-sysctl.conf, as the stacks' releases ship it", () => {
    // rancher/rke2@v1.35.7+rke2r1:bundle/share/rke2/rke2-cis-sysctl.conf, byte for byte.
    assert.equal(
      cisSysctlText(),
      "vm.panic_on_oom=0\nvm.overcommit_memory=1\nkernel.panic=10\nkernel.panic_on_oops=1\n",
    );
    assert.equal(CIS_KERNEL_PARAMETERS.length, 4);
    const params = nodeScriptParams("apply", {
      networkManagerConfig: "",
      bringUpKubeIpvs: false,
      rke2Profile: "cis",
      etcdUser: true,
    });
    assert.equal(params.PROFILE, "cis");
    assert.equal(params.CIS_SYSCTL, cisSysctlText());
    assert.equal(params.ETCD_USER, "true");
    assert.equal(
      nodeScriptParams("read", { networkManagerConfig: "", bringUpKubeIpvs: false }).PROFILE,
      undefined,
    );
  });

  it("the lab's RKE2 stand-in checks the same parameters the product writes", () => {
    // The stand-in states the release's values itself; they must be the same facts.
    const standin = fs.readFileSync(
      path.join(__dirname, "../../../test/lab/rke2-standin/rke2-server"),
      "utf8",
    );
    for (const [key, value] of CIS_KERNEL_PARAMETERS)
      assert.ok(standin.includes(`${key}=${value}`), key);
  });

  it("a host that lacks what the profile needs is drift until it has it", async () => {
    const facts = [
      "iptables_service=disabled",
      "ip6tables_service=disabled",
      "firewalld_service=absent",
      "firewalld_active=false",
      "nm_cloud_setup_service=absent",
      "nm_cloud_setup_timer=absent",
      "nm_cloud_setup_active=false",
      "reject_rules=0",
      "nm_config_b64=",
      "nm_replaces=",
      "kube_ipvs0=absent",
      "rke2_installed=true",
      "reboot_required=false",
      "host_findings=",
      "profile_findings=kernel.panic is 0, the cis profile needs 10;no etcd user in /etc/passwd",
    ].join("\n");
    assert.deepEqual(parseNodeFacts(facts).profileFindings, [
      "kernel.panic is 0, the cis profile needs 10",
      "no etcd user in /etc/passwd",
    ]);
    const state = {
      node: "n",
      connection: { host: "h", port: 22, user: "root", hostKey: "k" },
      sshKeyFingerprint: "f",
      script: "s",
      bringUpKubeIpvs: false,
      firewallServicesDisabled: true,
      nmCloudSetupDisabled: true,
      rejectRulesAbsent: true,
      networkManagerConfig: "",
      rke2Profile: "cis",
      etcdUser: true,
    };
    const diff = (found: readonly string[]) =>
      nodePreparationProvider.diff!("id", { ...state, profileFindings: found }, state);
    assert.equal((await diff(["no etcd user in /etc/passwd"])).changes, true);
    assert.equal((await diff([])).changes, false);
  });
});
