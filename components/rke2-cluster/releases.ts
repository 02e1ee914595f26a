/**
 * Which release changes RKE2 supports on a running node. RKE2 follows the Kubernetes version
 * skew policy: an upgrade must not skip a minor release ("Ensure that your plan does not skip
 * intermediate minor versions when upgrading. Nothing in the upgrade process will protect
 * against unsupported changes", rancher/rke2-docs@9477b7b1:docs/upgrades/manual.md), and going
 * back is a binary downgrade plus a restore of a datastore snapshot taken on the older minor
 * (rancher/rke2-docs@9477b7b1:docs/upgrades/roll-back.md; "Kubernetes does not support
 * downgrades of control-plane components", docs/upgrades/automated.md). So a stack may move a
 * node forward within its minor or to the next minor, and never back.
 */

/** An RKE2 release: v<major>.<minor>.<patch>+rke2r<n>. */
export interface Rke2Release {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  readonly revision: number;
}

export function parseRke2Release(text: string): Rke2Release | undefined {
  const m = /^v(\d+)\.(\d+)\.(\d+)\+rke2r(\d+)$/.exec(text);
  if (!m) return undefined;
  const [major, minor, patch, revision] = m.slice(1).map(Number);
  return { major, minor, patch, revision };
}

function compare(a: Rke2Release, b: Rke2Release): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch || a.revision - b.revision;
}

/**
 * Why moving a node from `installed` to `desired` is not supported, or undefined when it is (or
 * when nothing is installed). A release the binary reports that does not parse is an error too:
 * the step cannot tell which way it would go.
 */
export function releaseStepProblem(installed: string, desired: string): string | undefined {
  if (installed === "none" || installed === desired) return undefined;
  const from = parseRke2Release(installed);
  const to = parseRke2Release(desired);
  if (!from)
    return `its rke2 binary reports "${installed}", which is not an RKE2 release, so the step cannot tell whether ${desired} is an upgrade`;
  if (!to) return `rke2.version ${desired} is not an RKE2 release (v1.35.7+rke2r1)`;
  if (compare(to, from) < 0)
    return (
      `it runs ${installed} and rke2.version asks for ${desired}, a downgrade. RKE2 does not ` +
      `downgrade a running node: set rke2.version back to ${installed} or later, or roll back ` +
      `by hand with a datastore snapshot taken on v${to.major}.${to.minor} (rke2-docs, upgrades/roll-back)`
    );
  if (to.major !== from.major || to.minor - from.minor > 1) {
    const path: string[] = [];
    for (let minor = from.minor + 1; minor < to.minor; minor++)
      path.push(`v${from.major}.${minor}`);
    return (
      `it runs ${installed} and rke2.version asks for ${desired}, which skips ` +
      `${path.length > 0 ? path.join(", ") : "a major release"}. RKE2 upgrades one minor release ` +
      `at a time: set rke2.version to the latest v${from.major}.${from.minor + 1} release, ` +
      `run pulumi up, and go on from there${path.length > 0 ? ` (${[...path, `v${to.major}.${to.minor}`].join(" -> ")})` : ""}`
    );
  }
  return undefined;
}
