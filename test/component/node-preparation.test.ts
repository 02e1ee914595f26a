import * as assert from "assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { estateModel } from "../support/lab-stack";
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
