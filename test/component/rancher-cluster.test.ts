import * as assert from "assert/strict";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import { renderRancherChartValues } from "../../components/cluster-dns/manifests";
import { rancherCaChecksum } from "../../components/rancher-cluster";
import { EnvironmentModel, NodeSpec, RecordedResource } from "../../components/model";
import { EnvironmentOutputs } from "../../infra/program";
import { renderArtifacts } from "../../infra/render";
import { estateModel } from "../support/lab-stack";
import { recordEnvironment } from "../support/program";
import { isSecret } from "../support/secrets";
import { waitsFor } from "./graph";

const CLUSTER_V2 = "rancher2:index/clusterV2:ClusterV2";
const SYNC = "rancher2:index/clusterSync:ClusterSync";
const REGISTRATION = "pulumi-nodejs:dynamic/rancher:NodeRegistration";
const WAIT = "pulumi-nodejs:dynamic/rancher:ClusterWait";
const GATE = "pulumi-nodejs:dynamic/rke2:JoinGate";

/** Whether an output is marked secret (the SDK keeps the flag on the output itself). */
const isSecretOutput = (output: pulumi.Output<unknown>) =>
  (output as unknown as { isSecret: Promise<boolean> }).isSecret;

/** A uat1 node beside the seed's two, with the given octet and roles. */
function extraNode(model: EnvironmentModel, octet: number, roles: NodeSpec["roles"]): NodeSpec {
  const template = model.nodes.find((n) => n.cluster === "uat1")!;
  const ip = `192.168.122.${octet}`;
  return {
    ...template,
    name: `sza122${String(octet).padStart(3, "0")}.local`,
    ip,
    roles,
    ssh: { ...template.ssh, host: ip },
  };
}

const record = (model: EnvironmentModel) =>
  recordEnvironment(model, {
    sshPrivateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n"),
    rke2Token: pulumi.secret("K10-join"),
    rancherToken: pulumi.secret("token-abcde:rancher-api-secret"),
  });

describe("Rancher downstream cluster (Pulumi mocks)", function () {
  this.timeout(60000);
  const model = estateModel();
  let resources: RecordedResource[];
  let outputs: EnvironmentOutputs;

  before(async () => {
    ({ resources, outputs } = await record(model));
  });

  const named = (rs: RecordedResource[], type: string, name: string) => {
    const found = rs.find((r) => r.type === type && r.name === name);
    assert.ok(found, `no ${type} named ${name}`);
    return found;
  };
  const registration = (rs: RecordedResource[], node: string) =>
    named(rs, REGISTRATION, `rancher-uat1-register-${node}`);
  const sync = (rs: RecordedResource[], suffix: string) =>
    named(rs, SYNC, `rancher-uat1-sync-${suffix}`);
  const waits = (rs: RecordedResource[], a: RecordedResource, b: RecordedResource) =>
    waitsFor(rs, a.urn).has(b.urn);

  it("registers the first node after its preparation, the libvirt DNS records and the management cluster", () => {
    const first = registration(resources, "sza122031.local");
    const deps = [...waitsFor(resources, first.urn)];
    assert.ok(
      deps.some((u) => u.endsWith("prepare-sza122031.local-host")),
      deps.join("\n"),
    );
    assert.ok(
      deps.some((u) => u.endsWith("DnsRecords::libvirt-dns")),
      deps.join("\n"),
    );
    assert.ok(deps.some((u) => u.includes(`${CLUSTER_V2}::rancher-uat1`)));
    // Rancher runs on the management cluster this stack builds: its last server is in first.
    assert.ok(deps.some((u) => u.endsWith("JoinGate::management-gate-sza122022.local")));
  });

  const wait = (rs: RecordedResource[], suffix: string) =>
    named(rs, WAIT, `rancher-uat1-active-${suffix}`);
  const gate = (rs: RecordedResource[], node: string) =>
    named(rs, GATE, `rancher-uat1-gate-${node}`);

  it("registers .31 and .30 together, neither waiting for a plan or a sync, then waits for the cluster", () => {
    const first = registration(resources, "sza122031.local");
    const worker = registration(resources, "sza122030.local");
    assert.ok(!waits(resources, first, worker) && !waits(resources, worker, first));
    for (const r of [first, worker]) {
      for (const urn of waitsFor(resources, r.urn)) {
        assert.doesNotMatch(urn, /ClusterSync|ClusterWait/, `${r.name} waits for ${urn}`);
      }
    }
    const active = wait(resources, "sza122031.local");
    const firstSync = sync(resources, "sza122031.local");
    assert.ok(waits(resources, active, first) && waits(resources, active, worker));
    assert.ok(waits(resources, firstSync, active));
    assert.equal(resources.filter((r) => r.type === SYNC).length, 1);
  });

  it("waits with Rancher's API token as a secret and checks the cluster agent on the init node", () => {
    const active = wait(resources, "sza122031.local");
    assert.ok(isSecret(active.inputs.apiToken), "the API token is not a secret");
    assert.deepEqual([...active.additionalSecretOutputs].sort(), ["apiToken", "sshPrivateKey"]);
    assert.equal(active.inputs.initNode, "sza122031.local");
    assert.equal(active.inputs.rancherUrl, "https://ai-ear.cn");
    assert.equal(active.inputs.podNameserver, model.rancher!.downstreamClusters[0].clusterDnsIp);
  });

  it("with 3 etcd nodes and 2 workers: the first group, then each etcd node alone behind the join gate and a sync, then the other worker", async () => {
    const nodes = [
      ...model.nodes,
      extraNode(model, 32, ["etcd", "controlplane"]),
      extraNode(model, 33, ["etcd", "controlplane"]),
      extraNode(model, 34, ["worker"]),
    ];
    const { resources: rs } = await record({ ...model, nodes });
    const reg = (octet: number) => registration(rs, `sza1220${octet}.local`);
    const syncAfter = (octet: number) => sync(rs, `sza1220${octet}.local`);
    // First group: .31 (init) and .30, nothing between them.
    assert.ok(!waits(rs, reg(30), reg(31)) && !waits(rs, reg(31), reg(30)));
    assert.ok(waits(rs, syncAfter(31), reg(30)));
    // .32 after the first sync; its gate, wait and sync before .33.
    assert.ok(waits(rs, reg(32), syncAfter(31)));
    assert.ok(waits(rs, gate(rs, "sza122032.local"), reg(32)));
    assert.ok(waits(rs, wait(rs, "sza122032.local"), gate(rs, "sza122032.local")));
    assert.ok(waits(rs, syncAfter(32), wait(rs, "sza122032.local")));
    assert.ok(waits(rs, reg(33), syncAfter(32)));
    assert.ok(waits(rs, syncAfter(33), gate(rs, "sza122033.local")));
    // The remaining worker after the last etcd sync, then a last wait and sync.
    assert.ok(waits(rs, reg(34), syncAfter(33)));
    assert.ok(!waits(rs, reg(30), reg(34)));
    assert.ok(waits(rs, sync(rs, "workers"), reg(34)));
    assert.equal(gate(rs, "sza122032.local").inputs.node, "sza122032.local");
  });

  it("registers each node with the roles the stack gives it", () => {
    assert.deepEqual(registration(resources, "sza122031.local").inputs.roles, [
      "etcd",
      "controlplane",
    ]);
    assert.deepEqual(registration(resources, "sza122030.local").inputs.roles, ["worker"]);
  });

  it("runs Rancher's secure node command, a secret pinned to the stack's CA", () => {
    const checksum = rancherCaChecksum(model.rancher!.caCertificate!);
    for (const r of resources.filter((x) => x.type === REGISTRATION)) {
      assert.ok(isSecret(r.inputs.registrationCommand), "registration command is not a secret");
      const command = String((r.inputs.registrationCommand as { value: string }).value);
      assert.match(command, new RegExp(`--ca-checksum ${checksum}$`));
      assert.match(
        command,
        /^ curl -fL https:\/\/ai-ear\.cn\/system-agent-install\.sh \| sudo {2}sh -s - /,
      );
      assert.doesNotMatch(command, /--insecure/);
      assert.equal(r.inputs.caChecksum, checksum);
      assert.equal(r.inputs.insecure, false);
      assert.ok(!("sshPrivateKey" in r.inputs), "the registration records the SSH key");
      assert.ok(isSecret(r.inputs.apiToken));
      assert.deepEqual(r.additionalSecretOutputs, [
        "sshPrivateKey",
        "registrationCommand",
        "apiToken",
      ]);
    }
  });

  it("uses the insecure command only when the stack opts in", async () => {
    const insecure = {
      ...model,
      rancher: {
        ...model.rancher!,
        downstreamClusters: [
          { ...model.rancher!.downstreamClusters[0], insecureRegistration: true },
        ],
      },
    };
    const { resources: rs } = await record(insecure);
    const r = registration(rs, "sza122031.local");
    assert.equal(r.inputs.insecure, true);
    assert.match(String((r.inputs.registrationCommand as { value: string }).value), /--insecure/);
  });

  it("carries the DNS issue's values as chartValues, and the cluster-wide RKE2 settings", () => {
    const uat1 = model.rancher!.downstreamClusters[0];
    const cluster = named(resources, CLUSTER_V2, "rancher-uat1");
    const rke = cluster.inputs.rkeConfig as Record<string, unknown>;
    assert.equal(rke.chartValues, renderRancherChartValues(clusterDnsChartValues(model.dns, uat1)));
    assert.equal(rke.chartValues, outputs.downstreamChartValues.uat1);
    assert.equal(rke.machinePools, undefined);
    const global = YAML.parse(String(rke.machineGlobalConfig)) as Record<string, unknown>;
    assert.equal(global.cni, "calico");
    assert.equal(global["cluster-cidr"], uat1.clusterCidr);
    assert.equal(global["service-cidr"], uat1.serviceCidr);
    assert.equal(global["cluster-dns"], uat1.clusterDnsIp);
    assert.deepEqual(rke.upgradeStrategy, { controlPlaneConcurrency: "1", workerConcurrency: "1" });
    assert.deepEqual(rke.etcd, {
      snapshotScheduleCron: uat1.etcdSnapshot.scheduleCron,
      snapshotRetention: uat1.etcdSnapshot.retention,
    });
    assert.equal(cluster.inputs.kubernetesVersion, "v1.35.7+rke2r1");
    assert.equal(cluster.retainOnDelete, true);
  });

  it("renders for review exactly the rkeConfig text the program sends", () => {
    const rke = named(resources, CLUSTER_V2, "rancher-uat1").inputs.rkeConfig as {
      machineGlobalConfig: string;
      chartValues: string;
    };
    const rendered = renderArtifacts(model).filter((a) => a.cluster === "uat1");
    const content = (kind: string) => rendered.find((a) => a.kind === kind)?.content;
    assert.equal(content("rancher-machine-global-config"), rke.machineGlobalConfig);
    assert.equal(content("rancher-chart-values"), rke.chartValues);
    const values = YAML.parse(rke.chartValues) as {
      "rke2-coredns": { servers: { zones: { zone: string }[] }[] };
    };
    const zones = values["rke2-coredns"].servers.flatMap((s) => s.zones.map((z) => z.zone));
    assert.ok(
      zones.includes("local"),
      `no server block for the neutralised domain: ${zones.join(", ")}`,
    );
  });

  it("gives kubelet the node-local cache address when NodeLocalDNS runs under IPVS", async () => {
    const ipvs = {
      ...model,
      rancher: {
        ...model.rancher!,
        downstreamClusters: [
          { ...model.rancher!.downstreamClusters[0], kubeProxyMode: "ipvs" as const },
        ],
      },
    };
    const { resources: rs } = await record(ipvs);
    const rke = named(rs, CLUSTER_V2, "rancher-uat1").inputs.rkeConfig as Record<string, unknown>;
    const global = YAML.parse(String(rke.machineGlobalConfig)) as Record<string, unknown>;
    assert.deepEqual(global["kubelet-arg"], [`cluster-dns=${model.dns.nodeLocal.ip}`]);
    assert.deepEqual(global["kube-proxy-arg"], ["proxy-mode=ipvs"]);
  });

  it("configures the rancher2 provider from the stack, the token a secret", () => {
    const provider = named(resources, "pulumi:providers:rancher2", "rancher");
    assert.equal(provider.inputs.apiUrl, "https://ai-ear.cn");
    assert.equal(provider.inputs.caCerts, model.rancher!.caCertificate);
    assert.ok(isSecret(provider.inputs.tokenKey));
    const cluster = named(resources, CLUSTER_V2, "rancher-uat1");
    assert.match(cluster.provider, /pulumi:providers:rancher2::rancher::/);
  });

  it("exports the kubeconfig and the registration token only as secrets", async () => {
    const uat1 = outputs.downstreamClusters.uat1;
    assert.equal(await isSecretOutput(uat1.kubeconfig), true);
    assert.equal(await isSecretOutput(uat1.registrationToken), true);
  });
});
