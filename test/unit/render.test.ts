import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as YAML from "yaml";
import { Artifact, ArtifactKind, REDACTED, renderArtifacts } from "../../infra/render";
import { estateModel, estateRawConfig } from "../support/lab-stack";
import { setAt } from "./fixtures";

function ofKind(artifacts: readonly Artifact[], kind: ArtifactKind): Artifact[] {
  return artifacts.filter((a) => a.kind === kind);
}

describe("offline render of the lab stack", () => {
  const artifacts = renderArtifacts(estateModel());

  it("writes one libvirt DNS host XML with a record per server address", () => {
    const [xml, ...more] = ofKind(artifacts, "libvirt-dns-host-xml");
    assert.equal(more.length, 0);
    assert.equal(xml.path, "libvirt/dns-hosts.xml");
    assert.deepEqual(xml.content.trimEnd().split("\n"), [
      "<host ip='192.168.122.20'><hostname>ai-ear.cn</hostname></host>",
      "<host ip='192.168.122.21'><hostname>ai-ear.cn</hostname></host>",
      "<host ip='192.168.122.22'><hostname>ai-ear.cn</hostname></host>",
    ]);
  });

  it("writes uat1's registration plan: .31 and .30 in step 1, and the CA checksum Rancher computes", () => {
    const [plan, ...more] = ofKind(artifacts, "rancher-registration-plan");
    assert.equal(more.length, 0);
    assert.equal(plan.path, "rancher/uat1/registration-plan.json");
    const doc = JSON.parse(plan.content) as {
      caChecksum: string;
      steps: { step: number; node: string; roles: string[]; waitsFor: { before: string[] } }[];
    };
    assert.deepEqual(
      doc.steps.map((s) => [s.step, s.node, s.roles.join(",")]),
      [
        [1, "sza122031.local", "etcd,controlplane"],
        [1, "sza122030.local", "worker"],
      ],
    );
    // The stack's CA ends in a newline, so Rancher hashes it as it is: sha256sum of its bytes.
    const ca = estateModel().rancher!.caCertificate!;
    assert.ok(ca.endsWith("\n"));
    const sum = spawnSync("sha256sum", [], { input: ca, encoding: "utf8" }).stdout.split(" ")[0];
    assert.equal(doc.caChecksum, sum);
  });

  it("writes an owner-only config.yaml for each of the three servers", () => {
    const configs = ofKind(artifacts, "rke2-server-config");
    assert.deepEqual(
      configs.map((a) => a.target),
      ["sza122020.local", "sza122021.local", "sza122022.local"],
    );
    for (const config of configs) assert.equal(config.mode, 0o600, config.path);
  });

  it("puts the redaction marker where the join token goes, never a secret", () => {
    for (const config of ofKind(artifacts, "rke2-server-config")) {
      const parsed = YAML.parse(config.content) as { token: unknown };
      assert.equal(parsed.token, REDACTED, config.path);
    }
  });

  it("joins the second and third servers to the first", () => {
    const servers = ofKind(artifacts, "rke2-server-config").map(
      (a) => YAML.parse(a.content) as { server?: string },
    );
    assert.deepEqual(
      servers.map((s) => s.server),
      [undefined, "https://192.168.122.20:9345", "https://192.168.122.20:9345"],
    );
  });

  it("joins servers through the registration address when the stack sets one", () => {
    const raw = setAt(estateRawConfig(), "rke2.registrationAddress", "rke2.ai-ear.cn");
    setAt(raw, "rke2.tlsSan", ["rke2.ai-ear.cn"]);
    const servers = ofKind(renderArtifacts(estateModel(raw)), "rke2-server-config").map(
      (a) => YAML.parse(a.content) as { server?: string; "tls-san"?: string[] },
    );
    assert.deepEqual(
      servers.map((s) => s.server),
      [undefined, "https://rke2.ai-ear.cn:9345", "https://rke2.ai-ear.cn:9345"],
    );
    for (const s of servers) assert.deepEqual(s["tls-san"], ["rke2.ai-ear.cn"]);
  });

  it("writes no agent config when the stack has no agents", () => {
    assert.deepEqual(ofKind(artifacts, "rke2-agent-config"), []);
  });

  it("writes an owner-only agent config for each management agent, token redacted", () => {
    const raw = estateRawConfig();
    const nodes = raw.values.nodes as Record<string, unknown>[];
    nodes.push({ ...nodes[0], name: "sza122025.local", ip: "192.168.122.25", role: "agent" });
    const agents = ofKind(renderArtifacts(estateModel(raw)), "rke2-agent-config");
    assert.deepEqual(
      agents.map((a) => [a.target, a.path, a.mode]),
      [["sza122025.local", "rke2/sza122025.local/config.yaml", 0o600]],
    );
    const config = YAML.parse(agents[0].content) as Record<string, unknown>;
    assert.equal(config.server, "https://192.168.122.20:9345");
    assert.equal(config.token, REDACTED);
    assert.deepEqual(config["kube-proxy-arg"], ["proxy-mode=ipvs"]);
    assert.ok(!("system-default-registry" in config));
  });

  it("writes a CoreDNS Corefile for every cluster", () => {
    assert.deepEqual(
      ofKind(artifacts, "coredns-corefile").map((a) => a.path),
      ["dns/management/Corefile", "dns/uat1/Corefile"],
    );
  });

  it("writes the node-local Corefile for every cluster when NodeLocalDNS is on", () => {
    assert.deepEqual(
      ofKind(artifacts, "nodelocal-corefile").map((a) => a.path),
      ["dns/management/Corefile.nodelocal", "dns/uat1/Corefile.nodelocal"],
    );
  });

  it("writes no node-local Corefile when NodeLocalDNS is off", () => {
    const raw = setAt(estateRawConfig(), "dns.nodeLocal.enabled", false);
    assert.deepEqual(ofKind(renderArtifacts(estateModel(raw)), "nodelocal-corefile"), []);
  });

  it("writes a DNS egress NetworkPolicy per listed namespace and cluster", () => {
    assert.deepEqual(
      ofKind(artifacts, "networkpolicy").map((a) => a.path),
      ["dns/management/networkpolicy-default.yaml", "dns/uat1/networkpolicy-default.yaml"],
    );
  });

  it("gives every artifact its own path", () => {
    const paths = artifacts.map((a) => a.path);
    assert.equal(new Set(paths).size, paths.length);
  });

  it("never contains a private key", () => {
    for (const artifact of artifacts) {
      assert.ok(!artifact.content.includes("PRIVATE KEY"), artifact.path);
    }
  });
});

describe("offline render of the node-local Corefile per RKE2 release", () => {
  const model = estateModel();
  const nodeLocalOf = (version: string) => {
    const management = { ...model.management, version };
    const artifact = renderArtifacts({ ...model, management }).find(
      (a) => a.kind === "nodelocal-corefile" && a.cluster === management.name,
    );
    assert.ok(artifact);
    return artifact.content.split("\n")[0];
  };

  it("shows the fix's zones in the cluster-domain block on v1.35.7+rke2r1 (chart 1.46.201)", () => {
    assert.equal(nodeLocalOf("v1.35.7+rke2r1"), "cluster.local:53 local:53 ai-ear.cn:53 {");
  });

  it("shows them missing on v1.35.6+rke2r1 (chart 1.46.002), as that chart renders it", () => {
    assert.equal(nodeLocalOf("v1.35.6+rke2r1"), "cluster.local:53 {");
  });
});
