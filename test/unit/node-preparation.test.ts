import * as assert from "assert/strict";
import { DEFAULT_UNMANAGED_DEVICES } from "../../components/model";
import {
  missingDeviceSpecs,
  parseNodeFacts,
  renderUnmanagedDevicesConfig,
  unmanagedDeviceSpecs,
} from "../../components/node-preparation/render";

const NM_CONFIG =
  "[keyfile]\nunmanaged-devices+=interface-name:kube-ipvs0;interface-name:cali*;" +
  "interface-name:vxlan.calico;interface-name:vxlan-v6.calico;interface-name:tunl*;" +
  "interface-name:flannel*;interface-name:wireguard.cali;interface-name:wg-v6.cali";

/** What prepare-node.sh prints on stdout, with the NetworkManager config as base64 -w0 writes it. */
function scriptOutput(overrides: Record<string, string | undefined> = {}): string {
  const facts: Record<string, string | undefined> = {
    iptables_service: "disabled",
    ip6tables_service: "absent",
    firewalld_service: "enabled",
    firewalld_active: "true",
    nm_cloud_setup_service: "absent",
    nm_cloud_setup_timer: "disabled",
    nm_cloud_setup_active: "false",
    reject_rules: "2",
    nm_config_b64: Buffer.from(NM_CONFIG, "utf8").toString("base64"),
    nm_replaces: "/etc/NetworkManager/conf.d/50-storage-nic.conf",
    kube_ipvs0: "down",
    rke2_installed: "true",
    reboot_required: "true",
    host_findings: "",
    ...overrides,
  };
  return Object.entries(facts)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
}

describe("node preparation", () => {
  describe("NetworkManager unmanaged-devices", () => {
    it("keeps kube-ipvs0 and every CNI device out of NetworkManager's hands (seed 003)", () => {
      assert.equal(renderUnmanagedDevicesConfig(DEFAULT_UNMANAGED_DEVICES), NM_CONFIG);
    });
  });

  describe("the unmanaged-devices a keyfile config leaves in force (NetworkManager.conf(5))", () => {
    it("reads [keyfile] lines in order: = replaces, += appends; other sections do not count", () => {
      const config = [
        "[main]",
        "unmanaged-devices=interface-name:not-keyfile",
        "[keyfile]",
        "unmanaged-devices=interface-name:eth1",
        "unmanaged-devices+=interface-name:cali*;interface-name:tunl*",
        "[logging]",
        "level=INFO",
      ].join("\n");
      assert.deepEqual(unmanagedDeviceSpecs(config), [
        "interface-name:eth1",
        "interface-name:cali*",
        "interface-name:tunl*",
      ]);
      assert.deepEqual(
        unmanagedDeviceSpecs(`${config}\n[keyfile]\nunmanaged-devices = mac:00:11:22:33:44:55`),
        ["mac:00:11:22:33:44:55"],
      );
      assert.deepEqual(unmanagedDeviceSpecs(""), []);
    });

    it("names the stack's specs a found file lacks, whatever the found file's order or extras", () => {
      const seed003 =
        "[keyfile]\nunmanaged-devices=interface-name:kube-ipvs0;interface-name:cali*;interface-name:vxlan.calico;interface-name:tunl*";
      assert.deepEqual(missingDeviceSpecs(seed003, NM_CONFIG), [
        "interface-name:vxlan-v6.calico",
        "interface-name:flannel*",
        "interface-name:wireguard.cali",
        "interface-name:wg-v6.cali",
      ]);
      const reordered = `[keyfile]\nunmanaged-devices=interface-name:eth1;${unmanagedDeviceSpecs(NM_CONFIG).reverse().join(";")}`;
      assert.deepEqual(missingDeviceSpecs(reordered, NM_CONFIG), []);
      assert.equal(missingDeviceSpecs("", NM_CONFIG).length, 8);
    });
  });

  describe("parseNodeFacts", () => {
    it("reads every fact the node script reports", () => {
      assert.deepEqual(parseNodeFacts(scriptOutput()), {
        iptablesService: "disabled",
        ip6tablesService: "absent",
        firewalldService: "enabled",
        firewalldActive: true,
        nmCloudSetupService: "absent",
        nmCloudSetupTimer: "disabled",
        nmCloudSetupActive: false,
        rejectRules: 2,
        networkManagerConfig: NM_CONFIG,
        networkManagerReplaces: ["/etc/NetworkManager/conf.d/50-storage-nic.conf"],
        kubeIpvs0: "down",
        rke2Installed: true,
        rebootRequired: true,
        hostFindings: [],
      });
    });

    it("reads reboot_required=false as no reboot needed", () => {
      assert.equal(
        parseNodeFacts(scriptOutput({ reboot_required: "false" })).rebootRequired,
        false,
      );
    });

    it("refuses a yes/no fact that is neither true nor false, naming it", () => {
      assert.throws(
        () => parseNodeFacts(scriptOutput({ reboot_required: "yes" })),
        /reboot_required=yes; expected true or false/,
      );
    });

    it("decodes base64 config whose padding contains '='", () => {
      const config = "[keyfile]\nunmanaged-devices=interface-name:kube-ipvs0";
      const b64 = Buffer.from(config).toString("base64");
      assert.ok(b64.endsWith("="), b64);
      const facts = parseNodeFacts(scriptOutput({ nm_config_b64: b64 }));
      assert.equal(facts.networkManagerConfig, config);
    });

    it("reads an empty NetworkManager config as empty", () => {
      assert.equal(parseNodeFacts(scriptOutput({ nm_config_b64: "" })).networkManagerConfig, "");
    });

    it("ignores progress lines and tolerates CRLF line ends", () => {
      const out = `ok: iptables.service already disabled\n${scriptOutput().replace(/\n/g, "\r\n")}\r\n`;
      assert.equal(parseNodeFacts(out).kubeIpvs0, "down");
      assert.equal(parseNodeFacts(out).rejectRules, 2);
    });

    it("throws naming the fact the script did not report", () => {
      assert.throws(
        () => parseNodeFacts(scriptOutput({ reject_rules: undefined })),
        /node script output lacks reject_rules/,
      );
    });
  });
});
