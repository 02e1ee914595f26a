import * as crypto from "crypto";
import * as assert from "assert/strict";
import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import * as YAML from "yaml";
import { ClusterDns } from "../../components/cluster-dns";
import { OPERATOR_VALUES_ANNOTATION } from "../../components/cluster-dns/kept-values";
import { recordProgram } from "../../infra/mock-runtime";
import { EnvironmentModel, RecordedResource, serversOf } from "../../components/model";
import { estateModel } from "../support/lab-stack";
import { resourcesOf } from "../support/program";
import { PROVIDER_STUB_MARKER } from "../../components/host-providers";
import { isSecret } from "../support/secrets";
import { waitsFor as waitsForIn } from "./graph";

const TOKEN = "K10-lab-join-token-7f3a";

const record = (model: EnvironmentModel) =>
  resourcesOf(model, {
    sshPrivateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n"),
    rke2Token: pulumi.secret(TOKEN),
  });

describe("program (Pulumi mocks)", function () {
  this.timeout(60000);
  let resources: RecordedResource[];
  const model = estateModel();

  before(async () => {
    resources = await record(model);
  });

  const ofType = (type: string) => resources.filter((r) => r.type === type);

  it("declares the libvirt DNS records with the seed's three ai-ear.cn addresses", () => {
    const [records] = ofType("pulumi-nodejs:dynamic/libvirt:DnsHostRecords");
    assert.ok(records, "no libvirt DNS records resource");
    assert.deepEqual(records.inputs.records, [
      { ip: "192.168.122.20", hostnames: ["ai-ear.cn"] },
      { ip: "192.168.122.21", hostnames: ["ai-ear.cn"] },
      { ip: "192.168.122.22", hostnames: ["ai-ear.cn"] },
    ]);
    assert.equal(records.inputs.network, "default");
    assert.match(records.parent, /rke2remediation:libvirt:DnsRecords::libvirt-dns$/);
  });

  it("prepares every node, each with its own pinned host key", () => {
    const prepared = ofType("pulumi-nodejs:dynamic/node:Preparation");
    assert.deepEqual(
      prepared.map((r) => r.inputs.node).sort(),
      model.nodes.map((n) => n.name).sort(),
    );
    for (const r of prepared) {
      const node = model.nodes.find((n) => n.name === r.inputs.node)!;
      assert.deepEqual(r.inputs.connection, {
        host: node.ip,
        port: 22,
        user: "root",
        hostKey: node.ssh.hostKey,
      });
      assert.equal(r.inputs.rejectRulesAbsent, true);
      assert.match(String(r.inputs.networkManagerConfig), /interface-name:kube-ipvs0/);
    }
  });

  it("checks server ports only after every server is prepared", () => {
    const preflights = ofType("rke2remediation:node:ServerPortsPreflight");
    assert.equal(preflights.length, 3);
    const serverPreps = resources
      // dependsOn on a component reaches the custom resources inside it.
      .filter((r) => r.type === "pulumi-nodejs:dynamic/node:Preparation")
      .filter((r) =>
        ["sza122020.local", "sza122021.local", "sza122022.local"].some(
          (n) => r.name === `prepare-${n}-host`,
        ),
      )
      .map((r) => r.urn)
      .sort();
    for (const p of preflights) assert.deepEqual([...p.dependencies].sort(), serverPreps);
  });

  describe("with firewalld kept (nodePreparation.firewalld: keep)", () => {
    let kept: RecordedResource[];
    before(async () => {
      kept = await record({
        ...model,
        nodePreparation: { ...model.nodePreparation, firewalld: "keep" },
      });
    });
    const checkOf = (node: string) =>
      kept.find(
        (r) => r.type === "pulumi-nodejs:dynamic/node:PortsPreflight" && r.inputs.node === node,
      )!;

    it("records the choice on every node's preparation", () => {
      const prepared = kept.filter((r) => r.type === "pulumi-nodejs:dynamic/node:Preparation");
      assert.equal(prepared.length, model.nodes.length);
      for (const r of prepared) assert.equal(r.inputs.keepFirewalld, true, String(r.inputs.node));
      // Left out when not kept, so state written before the key holds the same inputs.
      for (const r of ofType("pulumi-nodejs:dynamic/node:Preparation"))
        assert.equal("keepFirewalld" in r.inputs, false);
    });

    it("checks from every node the TCP ports RKE2 and the CNI need on each peer of its cluster", () => {
      assert.deepEqual(
        kept.filter((r) => r.type === "rke2remediation:node:ServerPortsPreflight"),
        [],
      );
      assert.equal(
        kept.filter((r) => r.type === "rke2remediation:node:NodePortsPreflight").length,
        model.nodes.length,
      );
      // A server to another server: RKE2's ports, etcd's among them, and Calico's.
      assert.deepEqual(checkOf("sza122020.local").inputs.targets, [
        {
          peer: "192.168.122.21",
          ports: [6443, 9345, 10250, 2379, 2380, 2381, 179, 5473, 9098, 9099],
        },
        {
          peer: "192.168.122.22",
          ports: [6443, 9345, 10250, 2379, 2380, 2381, 179, 5473, 9098, 9099],
        },
      ]);
      // A downstream worker to its etcd and control plane node: no etcd port.
      assert.deepEqual(checkOf("sza122030.local").inputs.targets, [
        { peer: "192.168.122.31", ports: [6443, 9345, 10250, 179, 5473, 9098, 9099] },
      ]);
      // The etcd and control plane node to the worker: the kubelet and the CNI only.
      assert.deepEqual(checkOf("sza122031.local").inputs.targets, [
        { peer: "192.168.122.30", ports: [10250, 179, 5473, 9098, 9099] },
      ]);
    });

    it("starts RKE2 and registers downstream nodes only after the checks", () => {
      const waits = (urn: string) => waitsForIn(kept, urn);
      const urnOf = (type: string, name: string) =>
        kept.find((r) => r.type === type && r.name === name)!.urn;
      const start = urnOf(
        "pulumi-nodejs:dynamic/rke2:NodeStart",
        "management-start-sza122020.local",
      );
      for (const n of ["20", "21", "22"])
        assert.ok(waits(start).has(checkOf(`sza1220${n}.local`).urn), n);
      const registration = kept.find(
        (r) =>
          r.type === "pulumi-nodejs:dynamic/rancher:NodeRegistration" &&
          r.inputs.node === "sza122030.local",
      );
      assert.ok(registration, "no registration of the downstream worker");
      assert.ok(waits(registration.urn).has(checkOf("sza122030.local").urn));
    });
  });

  it("records a loader as each dynamic resource's provider, not the provider's code", () => {
    const dynamic = resources.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic/"));
    assert.ok(dynamic.length >= 20);
    for (const r of dynamic) {
      const code = String(r.inputs.__provider);
      assert.ok(code.includes(PROVIDER_STUB_MARKER), `${r.name}: no loader`);
      assert.ok(code.length < 600, `${r.name}: __provider is ${code.length} bytes`);
      assert.doesNotMatch(code, /runHostScript|parseNodeFacts|BEGIN OPENSSH/, r.name);
    }
  });

  it("records the SSH key's fingerprint in each step, never the key", () => {
    const sshResources = resources.filter((r) => r.custom && "connection" in r.inputs);
    assert.ok(sshResources.length >= 9);
    const holding = resources.filter((r) => JSON.stringify(r.inputs).includes("PRIVATE KEY"));
    assert.deepEqual(
      holding.map((r) => r.name),
      [],
      "resources whose inputs hold the key",
    );
    for (const r of sshResources) {
      assert.match(String(r.inputs.sshKeyFingerprint), /^(SHA256:|unparsed:)/, r.name);
      assert.ok(!("sshPrivateKey" in r.inputs), `${r.name} records sshPrivateKey`);
    }
  });

  it("delivers the management cluster's DNS fix as a server manifest after that server is prepared", () => {
    const [manifest] = ofType("pulumi-nodejs:dynamic/host:File").filter((r) =>
      String(r.inputs.path).includes("/manifests/"),
    );
    assert.ok(manifest, "no manifest file resource");
    assert.equal(
      manifest.inputs.path,
      "/var/lib/rancher/rke2/server/manifests/rke2-remediation-dns.yaml",
    );
    assert.deepEqual(manifest.inputs.connection, {
      host: "192.168.122.20",
      port: 22,
      user: "root",
      hostKey: model.nodes[0].ssh.hostKey,
    });
    const docs = String(manifest.inputs.content)
      .split("---\n")
      .map((d) => YAML.parse(d));
    assert.deepEqual(
      docs.map((d) => d.kind),
      ["HelmChartConfig", "NetworkPolicy"],
    );
    assert.equal(docs[0].metadata.name, "rke2-coredns");
    // Written only after the live check of the listed namespaces on that server.
    const [check] = ofType("pulumi-nodejs:dynamic/dns:EgressIsolationCheckOnServer");
    assert.ok(check, "no DNS egress check on the first server");
    assert.equal((check.inputs.connection as { host: string }).host, "192.168.122.20");
    assert.deepEqual(check.inputs.namespaces, [{ name: "default", isolate: false }]);
    const file = resources.find((r) => r.urn === manifest.parent);
    assert.ok(
      [...manifest.dependencies, ...(file?.dependencies ?? [])].includes(check.urn),
      "the manifest does not wait for the check",
    );
    // ... and after every server's check that no manifest of its own defines the same object.
    const conflictChecks = ofType("pulumi-nodejs:dynamic/dns:ManifestConflictCheck");
    const servers = serversOf(model);
    assert.deepEqual(
      conflictChecks.map((c) => [c.inputs.node, c.inputs.own]),
      servers.map((n, i) => [n.name, i === 0 ? manifest.inputs.path : ""]),
    );
    for (const conflictCheck of conflictChecks)
      assert.ok(
        [...manifest.dependencies, ...(file?.dependencies ?? [])].includes(conflictCheck.urn),
        `the manifest does not wait for ${String(conflictCheck.inputs.node)}'s manifest check`,
      );
    const component = resources.find(
      (r) => r.type === "rke2remediation:dns:ClusterDns" && r.name === "dns-management",
    )!;
    assert.ok(component.dependencies.some((u) => u.endsWith("prepare-sza122020.local-host")));
  });

  it("gives each downstream cluster its values as Rancher chartValues, with nothing to apply itself", () => {
    assert.equal(ofType("rke2remediation:dns:ClusterDns").length, 2);
    const downstream = resources.filter((r) => r.parent.endsWith("ClusterDns::dns-uat1"));
    assert.deepEqual(downstream, []);
  });

  it("through the Kubernetes API when the stack chooses helmChartConfig", async () => {
    const viaApi = {
      ...model,
      management: { ...model.management, dnsDelivery: "helmChartConfig" as const },
    };
    const recorded = await record(viaApi);
    const [hcc] = recorded.filter((r) => r.type === "kubernetes:helm.cattle.io/v1:HelmChartConfig");
    assert.equal((hcc.inputs.metadata as { name: string }).name, "rke2-coredns");
    const policies = recorded.filter(
      (r) => r.type === "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    );
    assert.equal(policies.length, 1);
    // Created only after the live check through the stack's kubeconfig, kept secret.
    const [check] = recorded.filter(
      (r) => r.type === "pulumi-nodejs:dynamic/dns:EgressIsolationCheck",
    );
    assert.ok(check, "no DNS egress check through the Kubernetes API");
    assert.ok(
      policies[0].dependencies.includes(check.urn),
      "the policy does not wait for the check",
    );
    assert.ok(check.additionalSecretOutputs.includes("kubeconfig"));
    const manifests = recorded.filter(
      (r) =>
        r.type === "pulumi-nodejs:dynamic/host:File" &&
        String(r.inputs.path).includes("/manifests/"),
    );
    assert.equal(manifests.length, 0);
  });

  it("through the Kubernetes API, keeps the values of an operator-made live HelmChartConfig, in plain view, and records them", async () => {
    const operatorValues = "replicaCount: 2\n";
    const recorded = await recordProgram("rke2-remediation", "test", () => {
      const provider = new k8s.Provider("management-cluster", { kubeconfig: "<kubeconfig>" });
      new ClusterDns("dns-management", {
        cluster: model.management,
        dns: model.dns,
        delivery: {
          kind: "helmChartConfig",
          provider,
          kubeconfig: pulumi.secret("<kubeconfig>"),
          live: pulumi.secret({ found: true, valuesContent: operatorValues, annotations: {} }),
        },
      });
    });
    const [hcc] = recorded.filter((r) => r.type === "kubernetes:helm.cattle.io/v1:HelmChartConfig");
    const spec = hcc.inputs.spec as { valuesContent: string };
    const metadata = hcc.inputs.metadata as { annotations: Record<string, string> };
    // Read through the secret kubeconfig, the values are no secret: the preview's diff shows them.
    assert.equal(isSecret(hcc.inputs.spec), false, JSON.stringify(hcc.inputs.spec));
    const values = YAML.parse(spec.valuesContent) as { replicaCount?: number; servers?: unknown[] };
    assert.equal(values.replicaCount, 2);
    assert.equal(values.servers?.length, 3);
    assert.equal(metadata.annotations[OPERATOR_VALUES_ANNOTATION], operatorValues);
  });

  /** The HelmChartConfig and the DNS NetworkPolicies the program delivers through the API. */
  async function deliveredThroughApi() {
    const viaApi = {
      ...model,
      management: { ...model.management, dnsDelivery: "helmChartConfig" as const },
    };
    const delivered = (await record(viaApi)).filter(
      (r) =>
        r.type === "kubernetes:helm.cattle.io/v1:HelmChartConfig" ||
        r.type === "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    );
    assert.equal(delivered.length, 2);
    return delivered;
  }

  it("keeps the HelmChartConfig and the DNS egress policies on destroy (retainOnDelete)", async () => {
    for (const r of await deliveredThroughApi())
      assert.equal(r.retainOnDelete, true, `${r.type} ${r.name}`);
  });

  it("through the Kubernetes API, takes back fields a hand edit took (server-side apply patch force)", async () => {
    for (const r of await deliveredThroughApi())
      assert.equal(
        (r.inputs.metadata as { annotations?: Record<string, string> }).annotations?.[
          "pulumi.com/patchForce"
        ],
        "true",
        `${r.type} ${r.name}`,
      );
  });

  /** A management agent at 192.168.122.<octet>, reached over SSH at that address. */
  const agentNode = (octet: number) => ({
    ...model.nodes[0],
    name: `sza1220${octet}.local`,
    ip: `192.168.122.${octet}`,
    roles: ["agent" as const],
    ssh: { ...model.nodes[0].ssh, host: `192.168.122.${octet}` },
  });

  describe("RKE2 servers", () => {
    const urnOf = (type: string, name: string) =>
      resources.find((r) => r.type === type && r.name === name)!.urn;
    const waitsFor = (urn: string) => waitsForIn(resources, urn);
    const gate = (n: string) =>
      urnOf("pulumi-nodejs:dynamic/rke2:JoinGate", `management-gate-sza1220${n}.local`);
    const start = (n: string) =>
      urnOf("pulumi-nodejs:dynamic/rke2:NodeStart", `management-start-sza1220${n}.local`);

    it("start server 2 only after server 1's gate, and server 3 only after server 2's", () => {
      assert.ok(waitsFor(start("21")).has(gate("20")));
      assert.ok(waitsFor(start("22")).has(gate("21")));
      assert.ok(!waitsFor(start("20")).has(gate("21")));
    });

    it("gate each server on its own start", () => {
      for (const n of ["20", "21", "22"]) assert.ok(waitsFor(gate(n)).has(start(n)));
    });

    it("start each server after its node's preparation and the ports preflight", () => {
      const deps = waitsFor(start("21"));
      assert.ok([...deps].some((u) => u.endsWith("prepare-sza122021.local-host")));
      assert.ok([...deps].some((u) => u.endsWith("preflight-sza122022.local-check")));
    });

    it("start the first server after the DNS manifest is in place", () => {
      assert.ok(
        [...waitsFor(start("20"))].some((u) =>
          u.includes("host:File::dns-management-manifest-file"),
        ),
      );
    });

    /** The recorded program with agents .25, .26 and .27, and agentsMaxUnavailable. */
    const withThreeAgents = async (agentsMaxUnavailable: number) => {
      const recorded = await record({
        ...model,
        management: { ...model.management, agentsMaxUnavailable },
        nodes: [...model.nodes, agentNode(25), agentNode(26), agentNode(27)],
      });
      const urn = (n: number) =>
        recorded.find((r) => r.name === `management-start-sza1220${n}.local`)!.urn;
      const closure = (of: string, seen = new Set<string>()): Set<string> => {
        const r = recorded.find((x) => x.urn === of);
        for (const d of [...(r?.dependencies ?? []), ...(r?.parent ? [r.parent] : [])])
          if (!seen.has(d)) closure(d, seen.add(d));
        return seen;
      };
      return { waits: (a: number, b: number) => closure(urn(a)).has(urn(b)) };
    };

    it("restart agents one at a time by default (agentsMaxUnavailable 1), in the order the stack lists them", async () => {
      const { waits } = await withThreeAgents(1);
      assert.ok(waits(26, 25) && waits(27, 26));
      assert.ok(!waits(25, 26) && !waits(25, 27));
    });

    it("with agentsMaxUnavailable 2, two agents at a time: the third waits for the first", async () => {
      const { waits } = await withThreeAgents(2);
      assert.ok(!waits(26, 25) && !waits(25, 26));
      assert.ok(waits(27, 25) && !waits(27, 26));
    });

    it("start agents after the last server's gate", async () => {
      const agent = agentNode(25);
      const withAgents = {
        ...model,
        management: { ...model.management, agentsMaxUnavailable: 2 },
        nodes: [...model.nodes, agent, agentNode(26)],
      };
      const recorded = await record(withAgents);
      const find = (name: string) => recorded.find((r) => r.name === name)!;
      const closure = (urn: string, seen = new Set<string>()): Set<string> => {
        const r = recorded.find((x) => x.urn === urn);
        for (const d of [...(r?.dependencies ?? []), ...(r?.parent ? [r.parent] : [])])
          if (!seen.has(d)) closure(d, seen.add(d));
        return seen;
      };
      const lastGate = find("management-gate-sza122022.local").urn;
      const a25 = find("management-start-sza122025.local").urn;
      const a26 = find("management-start-sza122026.local").urn;
      assert.ok(closure(a25).has(lastGate) && closure(a26).has(lastGate));
      assert.ok(!closure(a25).has(a26) && !closure(a26).has(a25), "agents wait for each other");
      assert.equal(find("management-start-sza122025.local").inputs.role, "agent");
    });

    it("leave agents alone too when deploy.rke2Servers is off, and let Rancher wait only for the records", async () => {
      const off = {
        ...model,
        nodes: [...model.nodes, agentNode(25)],
        deploy: { ...model.deploy, rke2Servers: false },
      };
      const recorded = await record(off);
      const rke2 = recorded.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic/rke2:"));
      assert.deepEqual(
        rke2.map((r) => r.name),
        [],
      );
      assert.ok(!recorded.some((r) => r.inputs.path === "/etc/rancher/rke2/config.yaml"));
      const clusterV2 = recorded.find((r) => r.type === "rancher2:index/clusterV2:ClusterV2")!;
      assert.deepEqual(
        clusterV2.dependencies.map((u) => u.slice(u.lastIndexOf("::") + 2)),
        ["libvirt-dns-hosts"],
      );
    });

    it("join servers and agents through the stack's registration address", async () => {
      const agent = agentNode(25);
      const management = {
        ...model.management,
        registrationAddress: "rke2.ai-ear.cn",
        tlsSan: ["rke2.ai-ear.cn"],
      };
      const recorded = await record({ ...model, management, nodes: [...model.nodes, agent] });
      const serverOf = (host: string) => {
        const step = recorded.find(
          (r) =>
            r.type === "pulumi-nodejs:dynamic/rke2:NodeStart" &&
            (r.inputs.connection as { host?: string } | undefined)?.host === host,
        );
        assert.ok(step, `no RKE2 step for ${host}`);
        const content = (step.inputs.config as { value: string }).value;
        return (YAML.parse(content) as { server?: string }).server;
      };
      assert.deepEqual(
        [20, 21, 22, 25].map((octet) => serverOf(`192.168.122.${octet}`)),
        [undefined, ...Array<string>(3).fill("https://rke2.ai-ear.cn:9345")],
      );
    });

    it("refuse a registration address that tls-san does not list", async () => {
      const management = { ...model.management, registrationAddress: "rke2.ai-ear.cn" };
      await assert.rejects(
        record({ ...model, management }),
        /tls-san of management lacks its registration address rke2\.ai-ear\.cn/,
      );
    });

    it("give the first server every other server's keys, as that server's step has them, to check before it changes anything", () => {
      const step = (n: string) => resources.find((r) => r.urn === start(n))!;
      const peers = step("20").inputs.peers as { node: string; config: string }[];
      assert.deepEqual(
        peers.map((p) => p.node),
        ["sza122021.local", "sza122022.local"],
      );
      for (const [i, n] of ["21", "22"].entries()) {
        const own = YAML.parse((step(n).inputs.config as { value: string }).value) as Record<
          string,
          unknown
        >;
        delete own.token;
        assert.deepEqual(YAML.parse(peers[i].config), own);
      }
      assert.equal(step("21").inputs.peers, undefined);
    });

    it("keep the token out of plain inputs and state: each config.yaml is a secret, its plain keys hold nothing of the token", () => {
      const steps = ofType("pulumi-nodejs:dynamic/rke2:NodeStart");
      assert.equal(steps.length, 3);
      for (const c of steps) {
        assert.ok(isSecret(c.inputs.config), `${c.name} holds the token in plain text`);
        assert.ok(c.additionalSecretOutputs.includes("config"));
        // The token-free view the diff names keys from: every rendered key but the token.
        const keys = c.inputs.managedKeys as Record<string, string>;
        assert.ok(!isSecret(keys) && "node-ip" in keys && !("token" in keys));
      }
      // The token is really in the config (secret-wrapped); neither it nor its SHA-256 (a
      // dictionary finds a weak token from an unsalted hash) is anywhere in plain form.
      assert.ok(steps.every((c) => JSON.stringify(c.inputs.config).includes(TOKEN)));
      const plain = JSON.stringify(
        resources.map((r) =>
          Object.fromEntries(Object.entries(r.inputs).filter(([, v]) => !isSecret(v))),
        ),
      );
      const digest = crypto.createHash("sha256").update(TOKEN).digest("hex");
      assert.ok(!plain.includes(TOKEN), "the token appears in some resource's plain inputs");
      assert.ok(
        !plain.includes(digest),
        "the token's SHA-256 appears in some resource's plain inputs",
      );
      for (const c of steps) {
        const config = (c.inputs.config as { value: string }).value;
        assert.ok(!plain.includes(crypto.createHash("sha256").update(config).digest("hex")));
      }
    });
  });

  it("leaves kube-ipvs0 down unless the stack asks otherwise", () => {
    for (const r of ofType("pulumi-nodejs:dynamic/node:Preparation"))
      assert.equal(r.inputs.bringUpKubeIpvs, false);
  });

  it("creates nothing for parts the stack turns off", async () => {
    const off = {
      ...model,
      deploy: {
        libvirtDnsRecords: false,
        nodePreparation: false,
        rke2Servers: false,
        clusterDns: false,
        rancherClusters: false,
      },
    };
    const none = await record(off);
    assert.equal(none.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic/")).length, 0);
  });
});
