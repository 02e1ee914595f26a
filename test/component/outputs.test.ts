/**
 * What the program returns as stack outputs (infra/index.ts exports each), under Pulumi's mock
 * runtime: the management cluster as Rke2Cluster registers it, and the outputs of a stack that
 * runs only node preparation and the libvirt records.
 */
import * as assert from "assert/strict";
import * as pulumi from "@pulumi/pulumi";
import {
  LIBVIRT_DNS_RECORDS,
  NODE_PREPARATION,
  RKE2_JOIN_GATE,
  RKE2_KUBECONFIG,
  RKE2_NODE_START,
} from "../../components/model";
import { estateModel, estateRawConfig } from "../support/lab-stack";
import { preparationAndRecordsStack } from "../support/minimal-stack";
import { recordEnvironment } from "../support/program";
import { setAt } from "../unit/fixtures";

function valueOf<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

describe("stack outputs (Pulumi mocks)", function () {
  this.timeout(60000);

  it("give the management cluster's release, servers in join order with addresses, and its registration URL", async () => {
    const { outputs } = await recordEnvironment(estateModel());
    const cluster = outputs.managementCluster;
    assert.ok(cluster);
    assert.equal(cluster.name, "management");
    assert.equal(await valueOf(cluster.version), "v1.35.7+rke2r1");
    assert.deepEqual(await valueOf(cluster.servers), [
      { name: "sza122020.local", ip: "192.168.122.20" },
      { name: "sza122021.local", ip: "192.168.122.21" },
      { name: "sza122022.local", ip: "192.168.122.22" },
    ]);
    assert.deepEqual(await valueOf(cluster.agents), []);
    assert.equal(await valueOf(cluster.registrationUrl), "https://192.168.122.20:9345");
  });

  it("give the management cluster's kubeconfig as a secret, read from the first server after its join gate", async () => {
    const { outputs, resources } = await recordEnvironment(estateModel());
    const kubeconfig = outputs.managementCluster!.kubeconfig;
    assert.equal(await pulumi.isSecret(kubeconfig), true);
    const [read] = resources.filter((r) => r.type === RKE2_KUBECONFIG.token);
    assert.ok(read, "no kubeconfig step");
    assert.equal(resources.filter((r) => r.type === RKE2_KUBECONFIG.token).length, 1);
    assert.equal(read.inputs.node, "sza122020.local");
    assert.equal(read.inputs.apiHost, "192.168.122.20");
    assert.match(
      String(read.inputs.script),
      /^components\/rke2-cluster\/read-kubeconfig\.sh@sha256:/,
    );
    const gate = resources.find(
      (r) => r.type === RKE2_JOIN_GATE.token && r.name.endsWith("gate-sza122020.local"),
    );
    assert.ok(gate);
    assert.ok(read.dependencies.includes(gate.urn), "the read does not wait for the first gate");
    assert.ok(read.additionalSecretOutputs.includes("kubeconfig"), "kept in plain state");
  });

  it("give the fixed registration address as the registration URL when the stack sets one", async () => {
    const raw = setAt(estateRawConfig(), "rke2.registrationAddress", "rke2.ai-ear.cn");
    setAt(raw, "rke2.tlsSan", ["rke2.ai-ear.cn"]);
    const { outputs } = await recordEnvironment(estateModel(raw));
    assert.equal(
      await valueOf(outputs.managementCluster!.registrationUrl),
      "https://rke2.ai-ear.cn:9345",
    );
  });

  it("give no management cluster when deploy.rke2Servers is off", async () => {
    const raw = setAt(estateRawConfig(), "deploy.rke2Servers", false);
    const { outputs } = await recordEnvironment(estateModel(raw));
    assert.equal(outputs.managementCluster, undefined);
    assert.deepEqual(await valueOf(outputs.nodesPendingRestart), []);
  });

  describe("nodesPendingRestart, from what each node step found on its host", () => {
    /** A node step's outputs: its inputs, with what the host has (`host(node)`) laid over. */
    const found =
      (host: (node: string) => Record<string, unknown>) =>
      (type: string, _name: string, inputs: Record<string, unknown>) =>
        type === RKE2_NODE_START.token ? { ...inputs, ...host(String(inputs.node)) } : inputs;
    const converged = (inputs: Record<string, unknown>) => ({
      installedVersion: inputs.version,
      restartPending: "",
    });

    it("is empty on an estate whose nodes run the stack's release and keys and owe nothing", async () => {
      const { outputs } = await recordEnvironment(estateModel(), undefined, (type, name, inputs) =>
        found(() => converged(inputs))(type, name, inputs),
      );
      assert.deepEqual(await valueOf(outputs.nodesPendingRestart), []);
    });

    it("names exactly the servers with another release, another managed key or an owed restart", async () => {
      const owes: Record<string, Record<string, unknown>> = {
        "sza122020.local": { installedVersion: "v1.35.6+rke2r1" },
        "sza122022.local": { restartPending: "rke2 v1.35.7+rke2r1, by pulumi up" },
      };
      const { outputs } = await recordEnvironment(estateModel(), undefined, (type, name, inputs) =>
        found((node) => ({ ...converged(inputs), ...owes[node] }))(type, name, inputs),
      );
      assert.deepEqual(await valueOf(outputs.nodesPendingRestart), [
        "sza122020.local",
        "sza122022.local",
      ]);
      const { outputs: keyed } = await recordEnvironment(
        estateModel(),
        undefined,
        (type, name, inputs) =>
          found((node) => ({
            ...converged(inputs),
            ...(node === "sza122021.local"
              ? {
                  managedKeys: {
                    ...(inputs.managedKeys as Record<string, string>),
                    "etcd-snapshot-retention": "9",
                  },
                }
              : {}),
          }))(type, name, inputs),
      );
      assert.deepEqual(await valueOf(keyed.nodesPendingRestart), ["sza122021.local"]);
    });
  });

  describe("of a stack of node preparation and the libvirt records only", () => {
    const recorded = recordEnvironment(estateModel(preparationAndRecordsStack()));

    it("declare only the records and each node's preparation", async () => {
      const { resources } = await recorded;
      const types = new Set(resources.filter((r) => r.custom).map((r) => r.type));
      assert.deepEqual(
        [...types].sort(),
        [LIBVIRT_DNS_RECORDS.token, NODE_PREPARATION.token].sort(),
      );
    });

    it("list each prepared node and the records, and nothing of the cluster parts", async () => {
      const { outputs } = await recorded;
      assert.deepEqual(Object.keys(outputs.preparedNodes), [
        "sza122020.local",
        "sza122021.local",
        "sza122022.local",
      ]);
      assert.ok(outputs.libvirtDnsRecords);
      assert.equal(outputs.managementCluster, undefined);
      assert.deepEqual(outputs.downstreamClusters, {});
      assert.deepEqual(outputs.downstreamChartValues, {});
    });
  });
});
