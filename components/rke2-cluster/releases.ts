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

/** A server and the release its rke2 binary reports ("none" when absent). */
export interface InstalledRelease {
  readonly node: string;
  readonly version: string;
}

/**
 * Why `desired` cannot be rolled out to servers that run these releases, naming a path that
 * works for every one of them, or undefined when each server's step is supported. Checked
 * before the first server changes: on a mix (1.35, 1.34, 1.34 with a stack at 1.36) the first
 * server would otherwise be upgraded and the others refused, and the advice to them would be a
 * downgrade of the first. The path starts from the oldest server's minor release.
 */
export function clusterReleaseProblem(
  servers: readonly InstalledRelease[],
  desired: string,
): string | undefined {
  const problems = servers
    .map((s) => ({ ...s, problem: releaseStepProblem(s.version, desired) }))
    .filter((s) => s.problem !== undefined);
  if (problems.length === 0) return undefined;
  const to = parseRke2Release(desired);
  const installed = servers
    .map((s) => ({ node: s.node, release: parseRke2Release(s.version) }))
    .filter((s): s is { node: string; release: Rke2Release } => s.release !== undefined);
  const why = problems.map((s) => `${s.node}: ${s.problem}`).join("; ");
  if (!to || installed.length === 0 || installed.length < problems.length)
    return `rke2.version ${desired} cannot be rolled out to every server (${why})`;
  const oldest = installed.reduce((a, b) => (compare(a.release, b.release) <= 0 ? a : b));
  const newest = installed.reduce((a, b) => (compare(a.release, b.release) >= 0 ? a : b));
  const runs = servers.map((s) => `${s.node} ${s.version}`).join(", ");
  if (compare(to, newest.release) < 0)
    return (
      `the servers run ${runs}, and rke2.version ${desired} would downgrade ${newest.node}. ` +
      `RKE2 does not downgrade a running node: set rke2.version to ${printRelease(newest.release)} ` +
      `or later, one minor release at a time from the oldest server (${why})`
    );
  const steps: string[] = [];
  for (let minor = oldest.release.minor + 1; minor <= to.minor; minor++) {
    // A step must not take the newest server back: within its minor, its patch or later.
    const floor = installed
      .map((s) => s.release)
      .filter((r) => r.major === to.major && r.minor === minor)
      .reduce<Rke2Release | undefined>((a, b) => (!a || compare(b, a) > 0 ? b : a), undefined);
    steps.push(
      minor === to.minor
        ? desired
        : `the latest v${to.major}.${minor} release${floor ? ` (${printRelease(floor)} or later)` : ""}`,
    );
  }
  return (
    `the servers run ${runs}: rke2.version ${desired} is not a supported step for every one of them ` +
    `(${why}). Upgrade from the oldest, ${oldest.node} at ${printRelease(oldest.release)}, one ` +
    `minor release at a time: set rke2.version to ` +
    `${steps.join(", run pulumi up, then ")}`
  );
}

function printRelease(r: Rke2Release): string {
  return `v${r.major}.${r.minor}.${r.patch}+rke2r${r.revision}`;
}
