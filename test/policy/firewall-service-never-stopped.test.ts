import { firewallServiceNeverStopped } from "../../policy/policies/firewall-service-never-stopped";
import { NODE_PREPARATION, REMOTE_COMMAND_TYPE, RKE2_NODE_START } from "../../components/model";
import { componentFile } from "../../components/assets";
import * as path from "path";
import { assertNoViolations, assertViolation, resource } from "./util";

/** What node preparation does to the firewall units, as a remote command: the compliant fixture. */
const COMPLIANT = [
  "systemctl disable iptables.service ip6tables.service",
  "systemctl disable --now firewalld.service",
  "systemctl disable --now nm-cloud-setup.timer",
  "# never: systemctl stop iptables",
].join("\n");

/** The compliant command with one text replaced. */
function changed(from: string, to: string): string {
  if (!COMPLIANT.includes(from)) throw new Error(`fixture has no "${from}"`);
  return COMPLIANT.replace(from, to);
}

describe("policy firewall-service-never-stopped", () => {
  const script = componentFile(
    path.join(__dirname, "../../components/node-preparation"),
    "prepare-node.sh",
  );

  it("accepts the shipped node preparation script", async () => {
    await assertNoViolations(firewallServiceNeverStopped, [
      resource(NODE_PREPARATION.token, { script }),
    ]);
  });

  it("accepts disabling the iptables units and stopping firewalld and nm-cloud-setup", async () => {
    await assertNoViolations(firewallServiceNeverStopped, [
      resource(REMOTE_COMMAND_TYPE, { create: COMPLIANT }),
    ]);
  });

  it("accepts a plain stop of firewalld", async () => {
    await assertNoViolations(firewallServiceNeverStopped, [
      resource(REMOTE_COMMAND_TYPE, {
        create: changed("disable --now firewalld.service", "stop firewalld"),
      }),
    ]);
  });

  for (const [from, to] of [
    ["disable iptables.service", "disable --now iptables.service"],
    ["disable iptables.service ip6tables.service", "--now disable iptables"],
    ["disable --now firewalld.service", "disable --now firewalld.service iptables.service"],
    ["disable --now firewalld.service", "stop firewalld ip6tables"],
    ["disable --now nm-cloud-setup.timer", "stop iptables"],
    ["disable --now nm-cloud-setup.timer", "restart ip6tables.service"],
    ["disable --now nm-cloud-setup.timer", "try-restart iptables"],
  ]) {
    it(`rejects "systemctl ${to}"`, async () => {
      await assertViolation(
        firewallServiceNeverStopped,
        [resource(REMOTE_COMMAND_TYPE, { create: changed(from, to) })],
        /removes every rule/,
      );
    });
  }

  it("rejects the shipped node script once it stops iptables", async () => {
    const stopping = script.replace(
      "systemctl disable --now firewalld.service",
      "systemctl stop iptables.service; systemctl disable --now firewalld.service",
    );
    if (stopping === script) throw new Error("the script no longer stops firewalld this way");
    await assertViolation(
      firewallServiceNeverStopped,
      [resource(NODE_PREPARATION.token, { script: stopping })],
      /seed 003/,
    );
  });

  for (const command of [
    "iptables -F",
    "iptables -t nat --flush",
    "iptables-restore < /etc/sysconfig/iptables",
    "iptables-restore < /root/rules.v4",
    "service iptables stop",
    "service ip6tables restart",
    "service iptables reload",
    "systemctl reload iptables.service",
    "nft flush ruleset",
    "nft -a flush table ip filter",
    "nft delete table inet filter",
    "firewall-cmd --reload",
    "firewall-cmd --complete-reload",
    "firewall-cmd --zone=public --add-port=9345/tcp --permanent && firewall-cmd --reload",
  ]) {
    it(`rejects "${command}"`, async () => {
      await assertViolation(
        firewallServiceNeverStopped,
        [
          resource(REMOTE_COMMAND_TYPE, {
            create: changed("# never: systemctl stop iptables", command),
          }),
        ],
        /removes every rule/,
      );
    });
  }

  for (const command of [
    "iptables-restore --noflush < /root/extra.rules",
    "iptables-restore -n < /root/extra.rules",
    "nft list ruleset",
    "firewall-cmd --state",
    "firewall-cmd --permanent --add-port=9345/tcp",
    "service sshd restart",
  ]) {
    it(`accepts "${command}"`, async () => {
      await assertNoViolations(firewallServiceNeverStopped, [
        resource(REMOTE_COMMAND_TYPE, {
          create: changed("# never: systemctl stop iptables", command),
        }),
      ]);
    });
  }

  for (const tail of ["service iptables stop", "nft flush ruleset"]) {
    it(`rejects rke2.installCommand ending "&& ${tail}"`, async () => {
      const start = componentFile(
        path.join(__dirname, "../../components/rke2-cluster"),
        "rke2-start.sh",
      );
      await assertViolation(
        firewallServiceNeverStopped,
        [
          resource(RKE2_NODE_START.token, {
            script: start,
            installCommand: `curl -sfL https://get.rke2.io | INSTALL_RKE2_VERSION=v1.35.7+rke2r1 sh - && ${tail}`,
          }),
        ],
        /removes every rule/,
      );
    });
  }
});
