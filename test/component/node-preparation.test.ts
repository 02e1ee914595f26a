import * as assert from "assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { estateModel, estateRawConfig } from "../support/lab-stack";
import { NodePreparations, type NodePreparationArgs } from "../../components/node-preparation";
import { DEFAULT_UNMANAGED_DEVICES } from "../../components/model";
import { rancherPreviewOutputs, recordProgram } from "../../infra/mock-runtime";
import { deployEnvironment, EnvironmentOutputs } from "../../infra/program";

const PREPARATION_TYPE = "pulumi-nodejs:dynamic/node:Preparation";

/** The stack's outputs when the named nodes' preparations report `rebootRequired: true`. */
async function outputsWhenRebootRequiredOn(nodes: readonly string[]): Promise<string[]> {
  const model = estateModel();
  const preview = rancherPreviewOutputs();
  let outputs: EnvironmentOutputs | undefined;
  await recordProgram(
    "rke2-remediation",
    model.stack,
    () => {
      outputs = deployEnvironment(model, {
        sshPrivateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n"),
      });
    },
    (type, name, inputs) =>
      type === PREPARATION_TYPE
        ? { ...inputs, rebootRequired: nodes.includes(String(inputs.node)) }
        : preview(type, name, inputs),
  );
  return new Promise((resolve) => outputs!.nodesRequiringReboot.apply(resolve));
}

describe("node preparation outputs (Pulumi mocks)", function () {
  this.timeout(60000);

  it("lists the nodes whose preparation asked for a reboot, in the stack's node order", async () => {
    assert.deepEqual(await outputsWhenRebootRequiredOn(["sza122030.local", "sza122021.local"]), [
      "sza122021.local",
      "sza122030.local",
    ]);
  });

  it("lists no node when no preparation asked for a reboot", async () => {
    assert.deepEqual(await outputsWhenRebootRequiredOn([]), []);
  });
});

describe("NodePreparations in a program of its own (Pulumi mocks)", function () {
  this.timeout(60000);
  const model = estateModel();
  const node = model.nodes[0];
  const declare = (args: Partial<NodePreparationArgs>) =>
    recordProgram("one-server", "test", () => {
      new NodePreparations("prepare", {
        nodes: [{ node, sshPrivateKey: pulumi.secret("key"), ...args }],
      });
    });

  it("declares one host step per node under one component, each named as before", async () => {
    const resources = await recordProgram("one-server", "test", () => {
      new NodePreparations("prepare", {
        nodes: model.nodes.map((n) => ({ node: n, sshPrivateKey: pulumi.secret("key") })),
      });
    });
    const [component] = resources.filter((r) => r.type === "rke2remediation:node:Preparations");
    const steps = resources.filter((r) => r.type === PREPARATION_TYPE);
    assert.deepEqual(
      steps.map((r) => r.name).sort(),
      model.nodes.map((n) => `prepare-${n.name}-host`).sort(),
    );
    for (const step of steps) {
      assert.equal(step.parent, component.urn);
      // State written with a component per node keeps the step: its alias names that parent.
      const node = step.name.slice("prepare-".length, -"-host".length);
      assert.deepEqual(step.aliasParents, [
        `urn:pulumi:test::one-server::rke2remediation:node:Preparation::prepare-${node}`,
      ]);
    }
    // Nothing else: a node costs Pulumi one resource.
    assert.equal(resources.length, model.nodes.length + 1, "the component and the steps");
  });

  it("refuses a node listed twice, naming it", async () => {
    await assert.rejects(
      recordProgram("one-server", "test", () => {
        new NodePreparations("prepare", {
          nodes: [node, node].map((n) => ({ node: n, sshPrivateKey: pulumi.secret("key") })),
        });
      }),
      new RegExp(`node ${node.name.replace(/\./g, "\\.")} is listed twice`),
    );
  });

  it("takes the stack config's defaults for what it is not given", async () => {
    const [defaulted] = (await declare({})).filter((r) => r.type === PREPARATION_TYPE);
    const [explicit] = (
      await declare({
        unmanagedDevices: DEFAULT_UNMANAGED_DEVICES,
        cni: "calico",
        kubeProxyMode: "iptables",
        bringUpKubeIpvs: false,
      })
    ).filter((r) => r.type === PREPARATION_TYPE);
    assert.deepEqual(defaulted.inputs, explicit.inputs);
    // The stack-config path fills the same values in for a stack that sets none of them.
    const raw = estateRawConfig();
    const values = raw.values as { rke2: Record<string, unknown> };
    delete values.rke2.cni;
    delete values.rke2.kubeProxyMode;
    const model = estateModel(raw);
    assert.equal(model.management.cni, defaulted.inputs.cni);
    assert.equal(model.management.kubeProxyMode, defaulted.inputs.kubeProxyMode);
    assert.deepEqual(model.nodePreparation.unmanagedDevices, DEFAULT_UNMANAGED_DEVICES);
  });

  it("refuses an unmanaged list without kube-ipvs0 with the stack config's message, naming the node", async () => {
    await assert.rejects(
      declare({ unmanagedDevices: ["cali*", "not an interface"] }),
      new RegExp(
        `node ${node.name.replace(/\./g, "\\.")}: unmanagedDevices\\[1\\] "not an interface" is not an interface name pattern\\. ` +
          "unmanagedDevices must include kube-ipvs0; NetworkManager managing it is what took ClusterIPs down in seed 003\\.",
      ),
    );
  });
});
