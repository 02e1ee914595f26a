import * as pulumi from "@pulumi/pulumi";
import { EnvironmentModel } from "../../components/model";
import { recordProgram, RecordedResource } from "../../infra/mock-runtime";
import { deployEnvironment } from "../../infra/program";

/** Resources the program registers for a model, as `verify` sees them. */
export function resourcesOf(model: EnvironmentModel): Promise<RecordedResource[]> {
  return recordProgram("rke2-remediation", model.stack, () =>
    deployEnvironment(model, { sshPrivateKey: pulumi.secret("key") }),
  );
}
