import * as assert from "assert/strict";
import { rancherNodeCommand } from "../../infra/mock-runtime";
import {
  caChecksumOf,
  checkNodeCommand,
  parseNodeCommand,
  rancherCaChecksum,
  redact,
  registrationPlan,
  registrationPlanDocument,
  roleFlags,
} from "../../components/rancher-cluster/registration";
import { NodeSpec } from "../../components/model";
import { estateModel } from "../support/lab-stack";

const CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const TOKEN = "tok123456789secret";
const SERVER = "https://ai-ear.cn";
const SUM = rancherCaChecksum(CA);
const secure = rancherNodeCommand({
  serverUrl: SERVER,
  token: TOKEN,
  caChecksum: SUM,
  insecure: false,
});

/** Independent vectors: `printf '<pem>' | sha256sum` of the bytes Rancher hashes (the PEM with
 * "\n" appended when it does not end in one; rancher/rancher@v2.14.3 pkg/systemtemplate/import.go). */
const VECTORS = {
  lf: "848814ab71e579220d47348da4e53a440bdcc4aef1b763c673ba955d911a268d",
  crlf: "872c65a09f0101bed7fc91de89a07804ee3efd5815f51954b92eff562a568961",
  crlfNoTrailing: "85ec1413c67e9c50e10951ec4407229be5aeea0d00e4c6dfa66949b76e92a005",
};

describe("Rancher registration", () => {
  const model = estateModel();
  const uat1 = model.nodes.filter((n) => n.cluster === "uat1");
  const template = uat1[0];
  const node = (octet: number, roles: NodeSpec["roles"]): NodeSpec => ({
    ...template,
    name: `sza1220${octet}.local`,
    ip: `192.168.122.${octet}`,
    roles,
    ssh: { ...template.ssh, host: `192.168.122.${octet}` },
  });
  const steps = (nodes: NodeSpec[]) =>
    registrationPlan(nodes).map((p) => [p.step, p.node.name, p.group]);

  describe("order", () => {
    it("registers uat1's .31 (etcd, controlplane) and .30 (worker) together, before any wait for the cluster", () => {
      assert.deepEqual(steps([...uat1].reverse()), [
        [1, "sza122031.local", "first"],
        [1, "sza122030.local", "first"],
      ]);
      const doc = registrationPlanDocument("uat1", uat1, SUM);
      for (const step of doc.steps) {
        assert.doesNotMatch(step.waitsFor.before.join(" "), /ClusterSync|active/);
      }
      assert.match(doc.steps[0].waitsFor.after.join(" "), /rancher-system-agent running/);
    });

    it("registers a three-etcd cluster's 2nd and 3rd etcd nodes one at a time after the first sync", () => {
      const nodes = [
        node(31, ["etcd", "controlplane"]),
        node(32, ["etcd", "controlplane"]),
        node(33, ["etcd", "controlplane"]),
        node(30, ["worker"]),
        node(34, ["worker"]),
      ];
      assert.deepEqual(steps(nodes), [
        [1, "sza122031.local", "first"],
        [1, "sza122030.local", "first"],
        [2, "sza122032.local", "etcd"],
        [3, "sza122033.local", "etcd"],
        [4, "sza122034.local", "worker"],
      ]);
      const doc = registrationPlanDocument("uat1", nodes, SUM);
      const entry = (name: string) => doc.steps.find((s) => s.node === name)!;
      assert.match(
        entry("sza122032.local").waitsFor.before.join(" "),
        /cluster active after sza122031\.local, sza122030\.local/,
      );
      assert.match(
        entry("sza122032.local").waitsFor.after.join(" "),
        /voting etcd member, no learner/,
      );
      assert.match(entry("sza122033.local").waitsFor.before.join(" "), /after sza122032\.local/);
    });

    it("puts one etcd node in the first group, and a controlplane node without etcd when the init node lacks it", () => {
      assert.deepEqual(
        steps([
          node(31, ["etcd"]),
          node(32, ["etcd"]),
          node(35, ["controlplane"]),
          node(30, ["worker"]),
        ]),
        [
          [1, "sza122031.local", "first"],
          [1, "sza122035.local", "first"],
          [1, "sza122030.local", "first"],
          [2, "sza122032.local", "etcd"],
        ],
      );
      assert.deepEqual(steps([node(31, ["etcd", "controlplane", "worker"])]), [
        [1, "sza122031.local", "first"],
      ]);
    });

    it("refuses a cluster without a worker, naming the cluster", () => {
      assert.throws(
        () => registrationPlan([node(31, ["etcd", "controlplane"])]),
        /cluster uat1 has no node with role worker; Rancher delivers no plan/,
      );
    });

    it("refuses a first group that would hold two etcd nodes", () => {
      assert.throws(
        () => registrationPlan([node(31, ["etcd", "controlplane"]), node(30, ["etcd", "worker"])]),
        /no worker node without etcd to register beside the init node/,
      );
    });

    it("appends role flags in Rancher's order whatever order the stack lists roles in", () => {
      assert.deepEqual(roleFlags(["worker", "controlplane", "etcd"]), [
        "--etcd",
        "--controlplane",
        "--worker",
      ]);
    });

    it("renders the CA checksum registration will require", () => {
      assert.equal(registrationPlanDocument("uat1", uat1, SUM).caChecksum, VECTORS.lf);
    });
  });

  describe("CA checksum, as Rancher computes it", () => {
    it("hashes a PEM ending in a newline as it is", () => {
      assert.equal(rancherCaChecksum(CA), VECTORS.lf);
    });

    it("appends the newline a PEM lacks, as /cacerts serves it", () => {
      assert.equal(rancherCaChecksum(CA.trimEnd()), VECTORS.lf);
    });

    it("keeps CRLF line ends; a CRLF PEM without a final newline gets \\n", () => {
      const crlf = CA.replace(/\n/g, "\r\n");
      assert.equal(rancherCaChecksum(crlf), VECTORS.crlf);
      assert.equal(rancherCaChecksum(crlf.slice(0, -2)), VECTORS.crlfNoTrailing);
    });

    it("is read back from Rancher's node command", () => {
      assert.equal(caChecksumOf(secure), SUM);
    });
  });

  describe("node command", () => {
    const insecure = rancherNodeCommand({
      serverUrl: SERVER,
      token: TOKEN,
      caChecksum: SUM,
      insecure: true,
    });
    const expected = { rancherUrl: SERVER, insecure: false, caChecksum: SUM };

    it("parses Rancher's command into installer URL, server, token and checksum", () => {
      assert.deepEqual(parseNodeCommand(secure), {
        installerUrl: `${SERVER}/system-agent-install.sh`,
        server: SERVER,
        token: TOKEN,
        caChecksum: SUM,
        insecure: false,
      });
      assert.equal("problem" in checkNodeCommand(secure, expected), false);
    });

    const refusals: [string, string, typeof expected, RegExp][] = [
      ["an unexpected shape", `${secure}; curl evil`, expected, /does not have the shape/],
      [
        "agent environment variables",
        `HTTP_PROXY="x"${secure}`,
        expected,
        /does not have the shape/,
      ],
      [
        "another Rancher",
        secure.split(SERVER).join("https://other.example"),
        expected,
        /registers with https:\/\/other\.example, but rancher\.url is/,
      ],
      ["the insecure command without the opt-in", insecure, expected, /skips TLS verification/],
      ["no --ca-checksum", secure.replace(/ --ca-checksum \S+/, ""), expected, /no --ca-checksum/],
      [
        "another CA's checksum",
        secure,
        { ...expected, caChecksum: VECTORS.crlf },
        /pins CA checksum .* but rancher\.caCertificate has checksum/,
      ],
    ];
    for (const [what, command, exp, reason] of refusals) {
      it(`refuses ${what} and never quotes the token`, () => {
        const result = checkNodeCommand(command, exp);
        assert.ok("problem" in result, "accepted");
        assert.match(result.problem, reason);
        assert.ok(!result.problem.includes(TOKEN), "the token is in the message");
      });
    }

    it("accepts the insecure command with the opt-in", () => {
      assert.equal("problem" in checkNodeCommand(insecure, { ...expected, insecure: true }), false);
    });

    it("redacts every occurrence of a secret", () => {
      assert.equal(redact(`a ${TOKEN} b ${TOKEN}`, [TOKEN]), "a [secret] b [secret]");
    });

    it("redacts any start of a secret of 8 characters or more, as the cluster agent logs half", () => {
      const half = TOKEN.slice(0, TOKEN.length / 2);
      assert.equal(
        redact(`with token starting with ${half}`, [TOKEN]),
        "with token starting with [secret]",
      );
      assert.equal(redact(`x${TOKEN.slice(0, 8)}y`, [TOKEN]), "x[secret]y");
      // Seven characters tell too little to be taken for the token.
      assert.equal(redact(`x${TOKEN.slice(0, 7)}y`, [TOKEN]), `x${TOKEN.slice(0, 7)}y`);
    });
  });
});
