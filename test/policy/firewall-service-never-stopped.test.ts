import { firewallServiceNeverStopped } from "../../policy/policies/firewall-service-never-stopped";
import { NODE_PREPARATION_TYPE, REMOTE_COMMAND_TYPE } from "../../policy/policies/resource-types";
import { componentFile } from "../../components/assets";
import * as path from "path";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy firewall-service-never-stopped", () => {
  const script = componentFile(
    path.join(__dirname, "../../components/node-preparation"),
    "prepare-node.sh",
  );

  it("accepts the shipped node preparation script", async () => {
    await assertNoViolations(firewallServiceNeverStopped, [
      resource(NODE_PREPARATION_TYPE, { script }),
    ]);
  });

  for (const command of [
    "systemctl stop iptables",
    "systemctl disable --now iptables ip6tables",
    "systemctl restart ip6tables.service",
    "systemctl --now disable iptables",
  ]) {
    it(`rejects a remote command running "${command}"`, async () => {
      await assertViolation(
        firewallServiceNeverStopped,
        [resource(REMOTE_COMMAND_TYPE, { create: `set -e\n${command}\n` })],
        /removes every rule/,
      );
    });
  }

  it("rejects a node script that stops iptables", async () => {
    const changed = script.replace(
      'systemctl disable "$unit"',
      'systemctl stop iptables; systemctl disable "$unit"',
    );
    await assertViolation(
      firewallServiceNeverStopped,
      [resource(NODE_PREPARATION_TYPE, { script: changed })],
      /seed 003/,
    );
  });

  it("accepts disabling without --now and stopping other units", async () => {
    const create =
      "systemctl disable iptables ip6tables\nsystemctl stop rke2-agent\n# systemctl stop iptables (never)";
    await assertNoViolations(firewallServiceNeverStopped, [
      resource(REMOTE_COMMAND_TYPE, { create }),
    ]);
  });
});

describe("policy firewall-service-never-stopped: flushes and default rules", () => {
  for (const command of [
    "iptables -F",
    "iptables -t nat --flush",
    "iptables-restore < /etc/sysconfig/iptables",
  ]) {
    it(`rejects "${command}"`, async () => {
      await assertViolation(
        firewallServiceNeverStopped,
        [resource(REMOTE_COMMAND_TYPE, { create: command })],
        /removes every rule/,
      );
    });
  }
});
