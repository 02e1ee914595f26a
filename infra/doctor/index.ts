/**
 * doctor for package users: `diagnose(settings, { sshPrivateKey })` reads the estate the settings
 * describe and names each incident's cause it finds, as `npm run doctor` does for a stack file.
 */
import type { EstateSettings } from "../estate";
import type { ManagementStackOutputs } from "../config/management-stack";
import { CONFIG_NAMESPACE, validateEnvironment } from "../config/validate";
import { diagnoseModel, type DiagnoseOptions, type DoctorReport } from "./diagnose";

export type { DoctorReport, DoctorProgress, Finding, Unchecked } from "./diagnose";
export { diagnoseModel };

export interface DiagnoseSettingsOptions extends DiagnoseOptions {
  /** The management stack's `rancher` output, when the settings name a `managementStack`. */
  readonly managementOutputs?: ManagementStackOutputs;
}

/**
 * Validates the settings as Rke2Estate does, then reads every host; a settings problem rejects
 * with every problem's key. Nothing on any host changes.
 */
export async function diagnose(
  settings: EstateSettings,
  options: DiagnoseSettingsOptions,
): Promise<DoctorReport> {
  const { model, problems } = validateEnvironment(
    "doctor",
    { values: settings, secretKeys: new Set(["sshPrivateKey"]) },
    { requireSecrets: false, managementOutputs: options.managementOutputs },
  );
  if (!model)
    throw new Error(
      `diagnose: ${problems.length} problem(s) in its settings:\n` +
        problems
          .map((p) => `  - ${p.key.replace(`${CONFIG_NAMESPACE}:`, "settings.")}: ${p.message}`)
          .join("\n"),
    );
  return diagnoseModel(model, options);
}
