/**
 * RKE2's `profile` setting and the host steps it requires before RKE2 starts. RKE2 does not
 * change the host itself: with a profile set it checks the host and exits when a requirement is
 * unmet (rancher/rke2-docs@9477b7b1:docs/security/hardening_guide.md, "Host-level requirements").
 * The facts, the same in every release the stacks support (rancher/rke2 at v1.33.13+rke2r2,
 * v1.34.10+rke2r1, v1.35.7+rke2r1 and v1.36.3+rke2r1):
 * - profiles: `cis` and `etcd`; any other value is fatal ("invalid value provided for --profile
 *   flag"): pkg/rke2/rke2.go ProfileCIS, ProfileETCD; pkg/cli/cmds/profile_linux.go
 *   validateProfile. The setting is `profile`, or RKE2_CIS_PROFILE (pkg/cli/cmds/root.go).
 * - `cis`: four kernel parameters read from /proc/sys must have the values of the release's
 *   bundle/share/rke2/rke2-cis-sysctl.conf (validateKernelReqs), and `protect-kernel-defaults`
 *   must not be set false (setCISFlags); then the etcd requirements below.
 * - `cis` and `etcd`, servers only: the `etcd` user and group exist (validateETCDReqs, Go's
 *   os/user, which reads /etc/passwd and /etc/group, not NSS: the hardening guide's note).
 * The hardening guide's steps: the sysctl file copied to /etc/sysctl.d/60-rke2-cis.conf and
 * applied; `useradd -r -c "etcd user" -s /sbin/nologin -M etcd -U`.
 */
import type { ClusterSettings, NodeSpec, Rke2PassThrough } from "../model";

/** The profiles RKE2 knows. */
export const RKE2_PROFILES = ["cis", "etcd"] as const;
export type Rke2Profile = (typeof RKE2_PROFILES)[number];

/** rke2-cis-sysctl.conf, in the release's order. */
export const CIS_KERNEL_PARAMETERS: readonly (readonly [string, number])[] = [
  ["vm.panic_on_oom", 0],
  ["vm.overcommit_memory", 1],
  ["kernel.panic", 10],
  ["kernel.panic_on_oops", 1],
];

/** Where the hardening guide puts the sysctl file, and its text. */
export const CIS_SYSCTL_PATH = "/etc/sysctl.d/60-rke2-cis.conf";
export function cisSysctlText(): string {
  return CIS_KERNEL_PARAMETERS.map(([key, value]) => `${key}=${value}\n`).join("");
}

/** The last value a list of pass-through settings gives `key` (`key+` included), if any. */
function lastSetting(sources: readonly (Rke2PassThrough | undefined)[], key: string): unknown {
  let found: unknown;
  for (const settings of sources)
    for (const name of [key, `${key}+`]) {
      const value = settings?.[name];
      if (value !== undefined) found = Array.isArray(value) ? value[value.length - 1] : value;
    }
  return found;
}

/** The pass-through settings that reach a node, in the order RKE2 reads them. */
function settingsOf(cluster: ClusterSettings, node: NodeSpec): (Rke2PassThrough | undefined)[] {
  const roleSettings = node.roles.includes("server")
    ? cluster.serverConfig
    : node.roles.includes("agent")
      ? cluster.agentConfig
      : undefined;
  return [cluster.extraConfig, roleSettings, node.extraConfig];
}

/** The `profile` the stack gives a node, as text; undefined when none. */
export function profileSettingOf(cluster: ClusterSettings, node: NodeSpec): string | undefined {
  const value = lastSetting(settingsOf(cluster, node), "profile");
  return value === undefined || value === "" ? undefined : String(value);
}

/** Whether the stack sets `protect-kernel-defaults: false` for the node. */
export function protectKernelDefaultsOff(cluster: ClusterSettings, node: NodeSpec): boolean {
  return String(lastSetting(settingsOf(cluster, node), "protect-kernel-defaults")) === "false";
}

/** A profile RKE2 knows, else undefined. */
export function knownProfile(value: string | undefined): Rke2Profile | undefined {
  return (RKE2_PROFILES as readonly string[]).includes(value ?? "")
    ? (value as Rke2Profile)
    : undefined;
}
