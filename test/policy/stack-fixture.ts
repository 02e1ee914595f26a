import * as pulumi from "@pulumi/pulumi";
import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/load";
import { EnvironmentModel } from "../../components/model";
import { loadEnvironmentModel } from "../../infra/config/validate";
import { recordProgram, RecordedResource } from "../../infra/mock-runtime";
import { deployEnvironment } from "../../infra/program";

/** The lab stack's model, for policy cases that change one field of a compliant estate. */
export function labModel(): EnvironmentModel {
  return loadEnvironmentModel("lab", rawConfigFromStackFile(stackFilePath("lab")), {
    requireSecrets: false,
  });
}

/** Resources the program registers for a model, as `verify` sees them. */
export function resourcesOf(model: EnvironmentModel): Promise<RecordedResource[]> {
  return recordProgram("rke2-remediation", model.stack, () =>
    deployEnvironment(model, { sshPrivateKey: pulumi.secret("key") }),
  );
}
