/**
 * A resource as the program declared it: what the mock runtime records, and what policies and
 * component tests read.
 */
export interface RecordedResource {
  readonly urn: string;
  readonly type: string;
  readonly name: string;
  readonly custom: boolean;
  readonly parent: string;
  readonly inputs: Record<string, unknown>;
  /** URNs from `dependsOn` and from inputs that are outputs of other resources. */
  readonly dependencies: readonly string[];
  readonly propertyDependencies: Readonly<Record<string, readonly string[]>>;
  readonly protect: boolean;
  readonly retainOnDelete: boolean;
  readonly ignoreChanges: readonly string[];
  readonly additionalSecretOutputs: readonly string[];
  readonly provider: string;
  /** The parent URN each of its aliases names (Pulumi's alias spec `parentUrn`), when recorded. */
  readonly aliasParents?: readonly string[];
}
