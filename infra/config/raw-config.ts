/**
 * The stack config as the validator reads it: the namespace, the raw values, the options.
 */
import { ManagementStackOutputs } from "./management-stack";

export const CONFIG_NAMESPACE = "rke2-remediation";

export interface RawStackConfig {
  /** Config values by key without the namespace; secret values are not needed here. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Keys (without namespace) whose values are stored as Pulumi secrets. */
  readonly secretKeys: ReadonlySet<string>;
  /** Full keys ("ns:key") of the stack's other namespaces, checked for a misspelt namespace. */
  readonly otherNamespaceKeys?: readonly string[];
}

export interface ValidationOptions {
  /** Deployments need every secret; offline render and verify run without them. */
  readonly requireSecrets: boolean;
  /**
   * The `rancher` output of the stack `managementStack` names, read by the caller (a
   * StackReference in the program, a file offline); absent, a stack that names one is refused.
   */
  readonly managementOutputs?: ManagementStackOutputs;
}
