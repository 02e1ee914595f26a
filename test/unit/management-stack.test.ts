/**
 * A downstream stack that takes Rancher's values from the management stack (`managementStack`):
 * what it reads, what it may not repeat, what both stacks may not declare, and the errors when
 * the outputs are missing or malformed.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import {
  managementOutputsFromFile,
  ManagementStackOutputs,
  parseManagementStackOutputs,
} from "../../infra/config/management-stack";
import { validateEnvironment } from "../../infra/config/validate";
import {
  estateModel,
  labManagementOutputs,
  labRawConfig,
  MutableRawConfig,
  uat1RawConfig,
  uat1StandaloneRawConfig,
} from "../support/lab-stack";
import { problemsOf, setAt, stackKey } from "./fixtures";

const LAB = "organization/rke2-remediation/lab";

function withOutputs(
  raw: MutableRawConfig,
  outputs: ManagementStackOutputs = labManagementOutputs(),
) {
  return validateEnvironment("uat1", raw, { requireSecrets: false, managementOutputs: outputs });
}

function problemAt(raw: MutableRawConfig, key: string, outputs?: ManagementStackOutputs) {
  const { problems } = withOutputs(raw, outputs);
  const found = problems.find((p) => p.key === stackKey(key));
  assert.ok(found, `no problem at ${key}: ${JSON.stringify(problems)}`);
  return found;
}

describe("managementStack: Rancher's values from the management stack", () => {
  it("the lab stack's output holds Rancher's URL, CA as given, addresses, clusters and nodes", () => {
    const outputs = labManagementOutputs();
    const lab = labRawConfig().values as { rancher: { url: string; caCertificate: string } };
    assert.equal(outputs.url, lab.rancher.url);
    assert.equal(outputs.caCertificate, lab.rancher.caCertificate);
    assert.ok(outputs.caCertificate?.endsWith("-----END CERTIFICATE-----\n"));
    assert.deepEqual(outputs.addresses, ["192.168.122.20", "192.168.122.21", "192.168.122.22"]);
    assert.deepEqual(outputs.downstreamClusters, []);
    assert.deepEqual(
      outputs.nodes.map((n) => n.ip),
      ["192.168.122.20", "192.168.122.21", "192.168.122.22"],
    );
  });

  it("gives uat1 the same model as the stack that repeats the values itself", () => {
    const referencing = withOutputs(uat1RawConfig());
    assert.deepEqual(referencing.problems, []);
    const standalone = validateEnvironment("uat1", uat1StandaloneRawConfig(), {
      requireSecrets: false,
    });
    assert.deepEqual(standalone.problems, []);
    const { managementStack, ...rest } = referencing.model!;
    assert.equal(managementStack, LAB);
    // The standalone stack keeps Rancher's record in its libvirt settings; nothing else differs.
    const standaloneModel = standalone.model!;
    assert.deepEqual(
      { ...rest, libvirt: { ...rest.libvirt, dnsRecords: {} } },
      { ...standaloneModel, libvirt: { ...standaloneModel.libvirt, dnsRecords: {} } },
    );
    assert.deepEqual(rest.dns.staticHosts["ai-ear.cn"], [...labManagementOutputs().addresses]);
  });

  it("offline, without the outputs, names managementStack and the command that writes them", () => {
    const problems = problemsOf(uat1RawConfig());
    const problem = problems.find((p) => p.key === stackKey("managementStack"));
    assert.ok(problem, JSON.stringify(problems));
    assert.match(problem.message, /--management-outputs <file>/);
    assert.ok(problem.message.includes(`pulumi stack output --stack ${LAB} --json`));
  });

  it("refuses outputs given to a stack that names no management stack", () => {
    const { problems } = validateEnvironment("uat1", uat1StandaloneRawConfig(), {
      requireSecrets: false,
      managementOutputs: labManagementOutputs(),
    });
    assert.deepEqual(
      problems.map((p) => p.key),
      [stackKey("managementStack")],
    );
  });

  it("refuses Rancher's URL, CA, static answer or record repeated in the referencing stack", () => {
    const lab = labRawConfig().values as { rancher: { url: string; caCertificate: string } };
    for (const [key, at, value] of [
      ["rancher.url", ["rancher", "url"], lab.rancher.url],
      ["rancher.caCertificate", ["rancher", "caCertificate"], lab.rancher.caCertificate],
      ['dns.staticHosts["ai-ear.cn"]', ["dns", "staticHosts", "ai-ear.cn"], ["192.168.122.20"]],
      [
        'libvirt.dnsRecords["ai-ear.cn"]',
        ["libvirt", "dnsRecords", "AI-EAR.cn"],
        ["192.168.122.20"],
      ],
    ] as const) {
      const problem = problemAt(setAt(uat1RawConfig(), [...at], value), key);
      assert.ok(problem.message.includes(`"${LAB}"`), problem.message);
      assert.ok(problem.message.includes(stackKey("managementStack")), problem.message);
    }
  });

  it("refuses a downstream cluster the management stack declares too, naming both", () => {
    const outputs = { ...labManagementOutputs(), downstreamClusters: ["uat1"] };
    const problem = problemAt(uat1RawConfig(), "rancher.downstreamClusters[0].name", outputs);
    assert.match(problem.message, /cluster "uat1" is declared by the management stack/);
    assert.match(problem.message, /registered and changed by both/);
    // The whole estate in one stack declares uat1 there: its own output says so.
    const estate = estateModel();
    assert.ok(estate.rancher?.downstreamClusters.some((c) => c.name === "uat1"));
  });

  it("refuses a node the management stack declares, by address or by name", () => {
    const byIp = setAt(uat1RawConfig(), "nodes[1].ip", "192.168.122.22");
    assert.match(
      problemAt(byIp, "nodes[1]").message,
      /node sza122022\.local \(192\.168\.122\.22\)/,
    );
    const byName = setAt(uat1RawConfig(), "nodes[0].name", "sza122020.local");
    assert.match(problemAt(byName, "nodes[0]").message, /each node is prepared by one stack/);
  });

  it("refuses a management-cluster node in a stack that references another's Rancher", () => {
    const raw = setAt(uat1RawConfig(), "nodes[1].cluster", undefined);
    assert.match(problemAt(raw, "nodes[1].cluster").message, /declares downstream clusters only/);
  });

  it("leaves a malformed dns.staticHosts for its reader to report", () => {
    const raw = setAt(uat1RawConfig(), "dns.staticHosts", ["192.168.122.20"]);
    assert.match(problemAt(raw, "dns.staticHosts").message, /must be a map/);
  });

  it("refuses a name that is no stack reference", () => {
    const raw = setAt(uat1RawConfig(), "managementStack", "org/project/stack/extra");
    assert.match(problemAt(raw, "managementStack").message, /<organization>\/<project>\/<stack>/);
  });

  describe("reading the output", () => {
    it("takes the file `pulumi stack output --json` writes, every output of the stack in it", () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-outputs-"));
      const file = path.join(dir, "lab.json");
      const outputs = labManagementOutputs();
      fs.writeFileSync(file, JSON.stringify({ preparedNodes: {}, rancher: outputs }));
      assert.deepEqual(managementOutputsFromFile(file), outputs);
      fs.writeFileSync(file, JSON.stringify({ preparedNodes: {} }));
      assert.throws(() => managementOutputsFromFile(file), /the output "rancher" is missing/);
      fs.writeFileSync(file, "not json");
      assert.throws(
        () => managementOutputsFromFile(file),
        /--management-outputs .*lab\.json: .*pulumi stack output --stack <management stack> --json/,
      );
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it("refuses an output of another shape, naming where it came from and what to do", () => {
      const good = labManagementOutputs();
      for (const bad of [
        { ...good, url: "http://ai-ear.cn" },
        { ...good, addresses: ["ai-ear.cn"] },
        { ...good, caCertificate: 3 },
        { ...good, nodes: [{ name: "x" }] },
        { ...good, downstreamClusters: "uat1" },
      ]) {
        assert.throws(
          () => parseManagementStackOutputs(bad, `stack "${LAB}"`),
          (err: Error) =>
            err.message.startsWith(`stack "${LAB}": the output "rancher"`) &&
            /run `pulumi up` there/.test(err.message),
          JSON.stringify(bad),
        );
      }
      assert.deepEqual(parseManagementStackOutputs({ ...good, caCertificate: null }, "x"), {
        ...good,
        caCertificate: null,
      });
    });
  });
});
