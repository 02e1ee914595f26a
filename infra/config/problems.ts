/** A problem in the stack config: the key it is at and what to do about it. */
export interface ConfigProblem {
  /** Full stack config key with path, e.g. `rke2-remediation:nodes[1].ip`. */
  readonly key: string;
  readonly message: string;
}

export class ConfigValidationError extends Error {
  constructor(
    readonly stack: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    super(
      `stack "${stack}" has ${problems.length} config problem(s):\n` +
        problems.map((p) => `  - ${p.key}: ${p.message}`).join("\n"),
    );
    this.name = "ConfigValidationError";
  }
}
