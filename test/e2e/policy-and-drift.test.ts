/**
 * The two pipelines users run, with the real CLI against the lab: drift detection with
 * `pulumi preview --refresh --expect-no-changes`, and the policy pack in `pulumi preview`, which
 * must agree with the offline `npm run verify`.
 */
import * as assert from "assert/strict";
import { pulumi } from "./cli";
import { spawnSync } from "child_process";
import * as fs from "fs";
import { builtinModules } from "module";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { runScript } from "../../components/ssh/run-script";
import { stackFilePath } from "../../infra/config/stack-file";
import {
  addRejectRule,
  handDeleteDnsHost,
  LAB_STACK,
  nodeConnection,
  nodeFile,
  REPO,
} from "../real/lab";

const NS = "rke2-remediation";

function verify(...args: string[]): { failed: boolean; mandatory: string[] } {
  const r = spawnSync(
    process.execPath,
    [path.join(REPO, "bin", "infra", "cli", "verify.js"), "--stack", LAB_STACK, "--json", ...args],
    {
      encoding: "utf8",
    },
  );
  const report = JSON.parse(r.stdout) as {
    configProblems: unknown[];
    violations: { policy: string; level: string }[];
  };
  const mandatory = [
    ...new Set(report.violations.filter((v) => v.level === "mandatory").map((v) => v.policy)),
  ].sort();
  return { failed: r.status !== 0, mandatory };
}

function driftCheck() {
  return pulumi("preview", "--refresh", "--expect-no-changes", "--diff");
}

describe("drift detection with the real CLI", function () {
  this.timeout(600000);

  before(() => {
    const r = pulumi("up", "--yes", "--refresh");
    assert.equal(r.status, 0, r.out);
    assert.equal(driftCheck().status, 0);
  });

  const cases: {
    what: string;
    inject: () => Promise<void>;
    resource: RegExp;
    property: RegExp;
    afterRepair?: () => void;
  }[] = [
    {
      what: "a REJECT rule re-added",
      inject: async () => {
        addRejectRule(20);
      },
      resource: /prepare-sza122020\.local-host/,
      property: /rejectRulesAbsent/,
    },
    {
      what: "iptables.service re-enabled",
      inject: async () => {
        assert.equal(
          (await runScript(nodeConnection(21), "systemctl enable iptables.service")).exitCode,
          0,
        );
      },
      resource: /prepare-sza122021\.local-host/,
      property: /firewallServicesDisabled/,
    },
    {
      what: "the NetworkManager file edited",
      inject: async () => {
        fs.writeFileSync(
          nodeFile(22, "/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf"),
          "[keyfile]\nunmanaged-devices=interface-name:cali*\n",
        );
      },
      resource: /prepare-sza122022\.local-host/,
      property: /networkManagerConfig/,
      // Rewriting the drop-in where RKE2 runs owes a reboot, which the drift check keeps
      // showing until the node has booted; the lab's nodes share one kernel, so the reboot
      // shows as the record naming another boot.
      afterRepair: () => {
        const pending = nodeFile(22, "/var/lib/rke2-remediation/reboot-pending");
        const lines = fs.readFileSync(pending, "utf8").split("\n");
        fs.writeFileSync(
          pending,
          ["00000000-0000-0000-0000-000000000000", ...lines.slice(1)].join("\n"),
        );
      },
    },
    {
      what: "a DNS record deleted",
      inject: async () => {
        handDeleteDnsHost("192.168.122.22");
      },
      resource: /libvirt-dns-hosts/,
      property: /records/,
    },
  ];

  for (const c of cases) {
    it(`detects ${c.what}, and the next up --refresh remediates it`, async () => {
      await c.inject();
      const drift = driftCheck();
      assert.notEqual(drift.status, 0, `drift went unnoticed:\n${drift.out}`);
      assert.match(drift.out, c.resource);
      assert.match(drift.out, c.property);
      const up = pulumi("up", "--yes", "--refresh");
      assert.equal(up.status, 0, up.out);
      c.afterRepair?.();
      const again = driftCheck();
      assert.equal(again.status, 0, again.out);
    });
  }
});

describe("the policy pack in previews agrees with npm run verify", function () {
  this.timeout(600000);
  const file = stackFilePath(LAB_STACK);
  let original: string;

  before(() => {
    original = fs.readFileSync(file, "utf8");
  });
  afterEach(() => fs.writeFileSync(file, original));

  function withConfig(change: (config: Record<string, unknown>) => void): void {
    const doc = YAML.parse(original) as { config: Record<string, unknown> };
    change(doc.config);
    fs.writeFileSync(file, YAML.stringify(doc));
  }

  const records = (c: Record<string, unknown>) =>
    (c[`${NS}:libvirt`] as { dnsRecords: Record<string, string[]> }).dnsRecords;

  const badStacks: {
    what: string;
    change: (c: Record<string, unknown>) => void;
    policies: string[];
  }[] = [
    {
      what: "Rancher records missing a server",
      change: (c) => (records(c)["ai-ear.cn"] = ["192.168.122.20", "192.168.122.21"]),
      policies: ["rancher-records-cover-management-servers"],
    },
    {
      what: "a record under the neutralised domain",
      change: (c) => (records(c)["rancher.local"] = ["192.168.122.20"]),
      policies: ["libvirt-record-outside-neutralized-domain"],
    },
    {
      what: "a record outside the subnet",
      change: (c) => (records(c)["registry.example"] = ["10.99.0.5"]),
      policies: ["libvirt-dns-record-in-subnet"],
    },
    {
      what: "NetworkManager managing Calico's devices",
      change: (c) => (c[`${NS}:nodePreparation`] = { unmanagedDevices: ["kube-ipvs0"] }),
      policies: ["cni-devices-unmanaged"],
    },
    {
      what: "an unmanaged list without tunl* on a calico cluster",
      change: (c) =>
        (c[`${NS}:nodePreparation`] = {
          unmanagedDevices: ["kube-ipvs0", "cali*", "vxlan.calico", "flannel*"],
        }),
      policies: ["cni-devices-unmanaged"],
    },
  ];

  for (const bad of badStacks) {
    it(`both block ${bad.what}`, () => {
      withConfig(bad.change);
      const offline = verify();
      const cli = pulumi("preview", "--policy-pack", "policy");
      assert.equal(offline.failed, true);
      assert.deepEqual(offline.mandatory, bad.policies);
      assert.notEqual(cli.status, 0, cli.out);
      for (const policy of bad.policies) assert.match(cli.out, new RegExp(`${policy}`));
    });
  }

  it("both pass the compliant stack", () => {
    assert.deepEqual(verify(), { failed: false, mandatory: [] });
    const cli = pulumi("preview", "--policy-pack", "policy");
    assert.equal(cli.status, 0, cli.out);
  });

  it("--policy-pack-config can make a mandatory policy advisory: the preview passes with a warning", () => {
    withConfig(badStacks[0].change);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-policy-config-"));
    const config = path.join(dir, "policy-config.json");
    fs.writeFileSync(
      config,
      JSON.stringify({ "rancher-records-cover-management-servers": "advisory" }),
    );
    const cli = pulumi("preview", "--policy-pack", "policy", "--policy-pack-config", config);
    assert.equal(cli.status, 0, cli.out);
    assert.match(cli.out, /rancher-records-cover-management-servers/);
    assert.match(cli.out, /advisory/i);
  });

  it("a policy's own config (protectedNamespaces) means the same to both", () => {
    withConfig((c) => {
      (c[`${NS}:dns`] as Record<string, unknown>).policyNamespaces = [
        "default",
        { name: "monitoring", isolate: true },
      ];
    });
    // By default a namespace of the estate's own may be isolated.
    assert.deepEqual(verify(), { failed: false, mandatory: [] });
    const open = pulumi("preview", "--policy-pack", "policy");
    assert.equal(open.status, 0, open.out);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-policy-config-"));
    const config = path.join(dir, "policy-config.json");
    fs.writeFileSync(
      config,
      JSON.stringify({
        "dns-egress-policy-is-an-allowance": { protectedNamespaces: ["monitoring"] },
      }),
    );
    assert.deepEqual(verify("--policy-pack-config", config), {
      failed: true,
      mandatory: ["dns-egress-policy-is-an-allowance"],
    });
    const cli = pulumi("preview", "--policy-pack", "policy", "--policy-pack-config", config);
    assert.notEqual(cli.status, 0, cli.out);
    assert.match(
      cli.out,
      /opts monitoring in to isolation, which the policy pack's config protects/,
    );
  });

  it("a policy's own config (allowedRegistries) means the same to both", () => {
    // The local stack sets no rke2.privateRegistry: its servers pull from docker.io.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-policy-config-"));
    const configAllowing = (registries: string[]) => {
      const file = path.join(dir, `allow-${registries.length}.json`);
      fs.writeFileSync(
        file,
        JSON.stringify({
          "rke2-system-images-from-allowed-registry": { allowedRegistries: registries },
        }),
      );
      return file;
    };
    const onlyPrivate = configAllowing(["192.168.122.156:30000"]);
    assert.deepEqual(verify("--policy-pack-config", onlyPrivate), {
      failed: true,
      mandatory: ["rke2-system-images-from-allowed-registry"],
    });
    const blocked = pulumi(
      "preview",
      "--policy-pack",
      "policy",
      "--policy-pack-config",
      onlyPrivate,
    );
    assert.notEqual(blocked.status, 0, blocked.out);
    assert.match(
      blocked.out,
      /pulls RKE2's system images from docker\.io \(it sets no system-default-registry\)/,
    );
    const withHub = configAllowing(["192.168.122.156:30000", "docker.io"]);
    assert.deepEqual(verify("--policy-pack-config", withHub), { failed: false, mandatory: [] });
    const passed = pulumi("preview", "--policy-pack", "policy", "--policy-pack-config", withHub);
    assert.equal(passed.status, 0, passed.out);
  });

  it("a policy's own config (allowedRancherHosts) means the same to both", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-policy-config-"));
    const config = path.join(dir, "policy-config.json");
    fs.writeFileSync(
      config,
      JSON.stringify({
        "rancher-registrations-use-allowed-rancher": {
          allowedRancherHosts: ["rancher.example.com"],
        },
      }),
    );
    assert.deepEqual(verify("--policy-pack-config", config), {
      failed: true,
      mandatory: ["rancher-registrations-use-allowed-rancher"],
    });
    const cli = pulumi("preview", "--policy-pack", "policy", "--policy-pack-config", config);
    assert.notEqual(cli.status, 0, cli.out);
    assert.match(cli.out, /the rancher2 provider rancher uses the Rancher at https:\/\/ai-ear\.cn/);
    assert.match(cli.out, /registration in cluster uat1 uses the Rancher at https:\/\/ai-ear\.cn/);
  });

  describe("the pack npm run policy:pack writes, copied outside the repository", () => {
    let pack: string;

    before(() => {
      pack = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-policy-pack-")), "pack");
      const built = spawnSync("npm", ["run", "--silent", "policy:pack", "--", "--out", pack], {
        cwd: REPO,
        encoding: "utf8",
      });
      assert.equal(built.status, 0, built.stdout + built.stderr);
      // Its declared dependencies only, from npm's cache: the operator namespace has no route out.
      const installed = spawnSync("npm", ["ci", "--offline", "--no-audit", "--no-fund"], {
        cwd: pack,
        encoding: "utf8",
      });
      assert.equal(installed.status, 0, installed.stdout + installed.stderr);
    });

    it("requires nothing but Node.js's own modules and its declared dependencies", () => {
      const code = fs.readFileSync(path.join(pack, "lib", "index.js"), "utf8");
      const required = [...new Set([...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]))];
      const declared = Object.keys(
        (
          JSON.parse(fs.readFileSync(path.join(pack, "package.json"), "utf8")) as {
            dependencies: Record<string, string>;
          }
        ).dependencies,
      );
      const builtin = new Set<string>(builtinModules);
      const foreign = required.filter(
        (m) => !builtin.has(m.replace(/^node:/, "")) && !declared.some((d) => m.startsWith(d)),
      );
      assert.deepEqual(foreign, []);
    });

    it("blocks what the repository's pack blocks, and passes the compliant stack", () => {
      withConfig(badStacks[0].change);
      const bad = pulumi("preview", "--policy-pack", pack);
      assert.notEqual(bad.status, 0, bad.out);
      assert.match(bad.out, /rancher-records-cover-management-servers/);
      fs.writeFileSync(file, original);
      const ok = pulumi("preview", "--policy-pack", pack);
      assert.equal(ok.status, 0, ok.out);
      // Every policy ran there: the firewall policy read the node script the pack ships.
      assert.doesNotMatch(ok.out, /cannot read the script/);
    });
  });
});
