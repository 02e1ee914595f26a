/** The program under Pulumi's mock runtime, as `verify` and the component and policy tests see it. */
import * as pulumi from "@pulumi/pulumi";
import { EnvironmentModel, RecordedResource } from "../../components/model";
import { EnvironmentSecrets } from "../../infra/config/load";
import { recordProgram } from "../../infra/mock-runtime";
import { estateModel } from "./lab-stack";
import { deployEnvironment, EnvironmentOutputs } from "../../infra/program";

export interface RecordedEnvironment {
  readonly resources: RecordedResource[];
  readonly outputs: EnvironmentOutputs;
}

/** Runs the program for a model and returns what it registered and the outputs it returned. */
export async function recordEnvironment(
  model: EnvironmentModel,
  secrets: EnvironmentSecrets = { sshPrivateKey: pulumi.secret("key") },
  outputsFor?: Parameters<typeof recordProgram>[3],
): Promise<RecordedEnvironment> {
  let outputs: EnvironmentOutputs | undefined;
  const resources = await recordProgram(
    "rke2-remediation",
    model.stack,
    () => {
      outputs = deployEnvironment(model, secrets);
    },
    outputsFor,
  );
  if (!outputs) throw new Error("the program returned no outputs");
  return { resources, outputs };
}

/** The resources the program registers for a model. */
export async function resourcesOf(
  model: EnvironmentModel,
  secrets?: EnvironmentSecrets,
): Promise<RecordedResource[]> {
  return (await recordEnvironment(model, secrets)).resources;
}

/** A test key and RKE2 token, the secrets policy and component tests record the estate with. */
export const TEST_SECRETS: EnvironmentSecrets = {
  sshPrivateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n"),
  rke2Token: pulumi.secret("K10-lab-test-token"),
};

/** The lab stack's resources, recorded with TEST_SECRETS. */
export function labResources(): Promise<RecordedResource[]> {
  return resourcesOf(estateModel(), TEST_SECRETS);
}
