/**
 * What this package gives another Pulumi program (`import ... from "rke2-remediation"`): the
 * estate as one component that takes a stack file's settings, the validator and the declaration
 * it runs, and the components, model and renderers below them. The stack-config program
 * (./index.ts) is built from the same functions.
 */
export { Rke2Estate, type Rke2EstateArgs, type EstateSettings } from "./estate";
export {
  validateEnvironment,
  loadEnvironmentModel,
  configWarnings,
  type RawStackConfig,
  type ValidationOptions,
} from "./config/validate";
export { ConfigValidationError, type ConfigProblem } from "./config/problems";
export {
  parseManagementStackOutputs,
  type ManagementStackOutputs,
} from "./config/management-stack";
export {
  deployEnvironment,
  type DeclarationScope,
  type EnvironmentOutputs,
  type ManagementClusterOutputs,
} from "./program";
export type { EnvironmentSecrets } from "./config/load";
export * from "../components";
export {
  diagnose,
  diagnoseModel,
  type DiagnoseSettingsOptions,
  type DoctorReport,
  type DoctorProgress,
  type Finding,
  type Unchecked,
} from "./doctor";
