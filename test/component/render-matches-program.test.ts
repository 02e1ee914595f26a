/**
 * `render` shows a reviewer what `pulumi up` puts in place: for each kind of artifact that a
 * resource of the program carries, the rendered file equals what the recorded resource (the lab
 * stack under the mock runtime) would write. Secrets are compared where render redacts them.
 */
import * as assert from "assert/strict";
import * as path from "path";
import * as YAML from "yaml";
import { componentFile } from "../../components/assets";
import { nodeScriptParams } from "../../components/node-preparation/render";
import { RecordedResource } from "../../components/model";
import { scriptWithParams } from "../../components/ssh/run-script";
import { Artifact, REDACTED, renderArtifacts } from "../../infra/render";
import { estateModel } from "../support/lab-stack";
import { labResources, TEST_SECRETS } from "../support/program";
import { SECRET_SIG } from "../support/secrets";

/** A recorded input, unwrapped when the SDK serialised it as a secret. */
function plain(value: unknown): unknown {
  if (typeof value === "object" && value !== null && Object.values(value).includes(SECRET_SIG)) {
    return (value as { value: unknown }).value;
  }
  return value;
}

describe("render writes what the program's resources carry (lab stack)", function () {
  this.timeout(60000);
  let resources: RecordedResource[];
  let artifacts: Artifact[];
  const ofType = (suffix: string) => resources.filter((r) => r.custom && r.type.endsWith(suffix));
  const artifact = (file: string) => {
    const found = artifacts.find((a) => a.path === file);
    assert.ok(found, `render wrote no ${file}: ${artifacts.map((a) => a.path).join(", ")}`);
    return found;
  };

  before(async () => {
    resources = await labResources();
    artifacts = renderArtifacts(estateModel());
  });

  it("each node's prepare-node.sh, with the parameters its Preparation runs it with (NODE_IP too)", () => {
    const script = componentFile(
      path.join(__dirname, "../../components/node-preparation"),
      "prepare-node.sh",
    );
    const preparations = ofType("node:Preparation");
    assert.equal(
      preparations.length,
      artifacts.filter((a) => a.kind === "node-preparation-script").length,
    );
    for (const r of preparations) {
      const inputs = r.inputs as Parameters<typeof nodeScriptParams>[1];
      assert.equal(
        artifact(`nodes/${String(r.inputs.node)}/prepare-node.sh`).content,
        scriptWithParams(script, nodeScriptParams("apply", inputs)),
        String(r.inputs.node),
      );
    }
  });

  it("each server's config.yaml, as its NodeStart writes it (the token redacted)", () => {
    const starts = ofType("rke2:NodeStart");
    assert.equal(starts.length, artifacts.filter((a) => a.kind === "rke2-server-config").length);
    const token = String(plain(TEST_SECRETS.rke2Token as unknown) ?? "");
    for (const r of starts) {
      const config = String(plain(r.inputs.config));
      assert.ok(config.includes("token: "), config);
      const redacted = config.replace(/^token: .*$/m, `token: ${JSON.stringify(REDACTED)}`);
      const rendered = artifact(`rke2/${String(r.inputs.node)}/config.yaml`).content;
      assert.deepEqual(YAML.parse(rendered), YAML.parse(redacted), String(r.inputs.node));
      assert.equal(rendered.includes(token) && token !== "", false);
    }
  });

  it("the libvirt network's host records, as DnsHostRecords adds them", () => {
    const [records] = ofType("libvirt:DnsHostRecords");
    const xml = artifacts.find((a) => a.kind === "libvirt-dns-host-xml");
    assert.ok(xml);
    const rendered = [...xml.content.matchAll(/<host ip='([^']+)'>(.*?)<\/host>/g)].map((m) => ({
      ip: m[1],
      hostnames: [...m[2].matchAll(/<hostname>([^<]+)<\/hostname>/g)].map((h) => h[1]),
    }));
    assert.deepEqual(rendered, records.inputs.records);
  });

  it("the HelmChartConfig and DNS NetworkPolicy, as the server manifest holds them", () => {
    const [manifest] = ofType("host:File").filter((r) =>
      String(r.inputs.path).endsWith("/rke2-remediation-dns.yaml"),
    );
    assert.ok(manifest, "no DNS server manifest");
    const docs = YAML.parseAllDocuments(String(plain(manifest.inputs.content))).map((d) =>
      d.toJSON(),
    );
    const management = estateModel().management.name;
    const ofManagement = artifacts.filter((a) => a.cluster === management);
    const rendered = ofManagement
      .filter((a) => a.kind === "helmchartconfig" || a.kind === "networkpolicy")
      .map((a) => YAML.parse(a.content) as unknown);
    assert.deepEqual(docs, rendered);
    // The chart values render shows are the ones the HelmChartConfig carries.
    const values = ofManagement.find((a) => a.kind === "coredns-chart-values");
    assert.ok(values);
    const hcc = docs[0] as { spec: { valuesContent: string } };
    assert.deepEqual(YAML.parse(values.content), YAML.parse(hcc.spec.valuesContent));
  });

  it("each downstream ClusterV2's chartValues and machineGlobalConfig, as the program sends them", () => {
    const clusters = ofType("clusterV2:ClusterV2");
    assert.ok(clusters.length > 0);
    for (const r of clusters) {
      const name = String(r.inputs.name);
      const rke = r.inputs.rkeConfig as { chartValues: string; machineGlobalConfig: string };
      assert.equal(artifact(`rancher/${name}/chart-values.yaml`).content, rke.chartValues);
      assert.equal(
        artifact(`rancher/${name}/machine-global-config.yaml`).content,
        rke.machineGlobalConfig,
      );
    }
  });
});
