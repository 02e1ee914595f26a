import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import {
  caChecksumOf,
  rancherCaChecksum,
  rancherNodeCommand,
  redact,
  registrationCommandProblem,
  registrationPlan,
  rke2UnitFor,
  roleFlags,
  tokenOf,
} from "../../components/rancher-cluster/registration";
import { labModel } from "./fixtures";

const CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const SUM = rancherCaChecksum(CA);
const secure = rancherNodeCommand({
  serverUrl: "https://ai-ear.cn",
  token: "tok123456789",
  caChecksum: SUM,
  insecure: false,
});

describe("Rancher registration", () => {
  describe("order", () => {
    const model = labModel();
    const uat1 = model.nodes.filter((n) => n.cluster === "uat1");

    it("registers the etcd + control-plane node first and the worker last, whatever the stack order", () => {
      const plan = registrationPlan([...uat1].reverse());
      assert.deepEqual(
        plan.map((p) => [
          p.node.name,
          p.step,
          roleFlags(p.node.roles).join(" "),
          rke2UnitFor(p.node.roles),
        ]),
        [
          ["sza122031.local", "first", "--etcd --controlplane", "rke2-server"],
          ["sza122030.local", "worker", "--worker", "rke2-agent"],
        ],
      );
    });

    it("appends role flags in Rancher's order whatever order the stack lists roles in", () => {
      assert.deepEqual(roleFlags(["worker", "controlplane", "etcd"]), [
        "--etcd",
        "--controlplane",
        "--worker",
      ]);
      assert.equal(rke2UnitFor(["controlplane"]), "rke2-server");
    });

    it("refuses a cluster without a node carrying both etcd and controlplane", () => {
      const split = [
        { ...uat1[0], roles: ["etcd" as const] },
        { ...uat1[0], name: "cp.local", roles: ["controlplane" as const] },
      ];
      assert.throws(() => registrationPlan(split), /both roles etcd and controlplane/);
    });
  });

  describe("CA checksum", () => {
    it("equals what the agent installer computes: sha256sum of the served cacerts file", () => {
      for (const pem of [CA, CA.trimEnd()]) {
        const shell = spawnSync("sha256sum", [], { input: pem, encoding: "utf8" });
        assert.equal(rancherCaChecksum(pem), shell.stdout.split(" ")[0]);
      }
      assert.notEqual(rancherCaChecksum(CA), rancherCaChecksum(CA.trimEnd()));
    });

    it("is read back from Rancher's node command", () => {
      assert.equal(caChecksumOf(secure), SUM);
      assert.equal(tokenOf(secure), "tok123456789");
    });
  });

  describe("command checks", () => {
    const insecure = rancherNodeCommand({
      serverUrl: "https://ai-ear.cn",
      token: "tok123456789",
      insecure: true,
    });

    it("accepts the secure command pinned to the stack's CA", () => {
      assert.equal(registrationCommandProblem(secure, false, SUM), undefined);
    });

    it("refuses the insecure command without the opt-in, and never quotes the token", () => {
      const problem = registrationCommandProblem(insecure, false, SUM);
      assert.match(problem ?? "", /skips TLS verification/);
      assert.doesNotMatch(problem ?? "", /tok123456789/);
      assert.equal(registrationCommandProblem(insecure, true, SUM), undefined);
    });

    it("refuses a command without --ca-checksum", () => {
      const bare = secure.replace(/ --ca-checksum \S+/, "");
      assert.match(registrationCommandProblem(bare, false, undefined) ?? "", /no --ca-checksum/);
    });

    it("refuses a checksum of another CA", () => {
      const other = rancherCaChecksum(CA.replace("fake", "other"));
      assert.match(
        registrationCommandProblem(secure, false, other) ?? "",
        /set rancher.caCertificate to the CA exactly as Rancher serves it/,
      );
    });

    it("redacts every occurrence of a secret", () => {
      assert.equal(
        redact("a tok123456789 b tok123456789", ["tok123456789"]),
        "a [secret] b [secret]",
      );
    });
  });
});
