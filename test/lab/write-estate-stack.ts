/**
 * The stack a user writes to adopt the hand-built estate that `lab estate VARIANT` makes: the
 * management servers under the names the user knows them by (`sza1220NN.local`, whatever the
 * hosts call themselves), the release the estate runs (RKE2 v1.35.6+rke2r1, seed 003), the
 * cluster settings of seed 003's config.yaml, and no downstream clusters. The token is given as a
 * secret afterwards (`pulumi config set --secret rke2Token`), read from the first server as a user
 * reads it.
 */
import * as fs from "fs";
import * as YAML from "yaml";
import { LabNode, localStackConfig } from "./write-local-stack";

const NS = "rke2-remediation";

/** The release seed 003's servers were installed with (test/lab/lab, ESTATE_RKE2_VERSION). */
export const ESTATE_RKE2_VERSION = "v1.35.6+rke2r1";

/**
 * The lab stack's settings for the servers alone, at the estate's release. NodeLocalDNS is off:
 * the estate runs without it, and the rke2-coredns chart of v1.35.6 cannot carry the DNS fix's
 * zones to a node-local cache (the stack config refuses that combination).
 */
export function estateStackConfig(
  kvmHostKey: string,
  servers: readonly LabNode[],
): Record<string, unknown> {
  // The management cluster's nodes: its servers, and a host a stack declares an agent.
  const base = localStackConfig(
    kvmHostKey,
    servers.filter((n) => n.roles.includes("server") || n.roles.includes("agent")),
  );
  const settings = Object.fromEntries(
    Object.entries(base).filter(([key]) => key !== `${NS}:rancher`),
  );
  const rke2 = base[`${NS}:rke2`] as Record<string, unknown>;
  const dns = base[`${NS}:dns`] as Record<string, unknown>;
  return {
    ...settings,
    [`${NS}:rke2`]: { ...rke2, version: ESTATE_RKE2_VERSION },
    [`${NS}:dns`]: { ...dns, nodeLocal: { enabled: false } },
  };
}

/**
 * Replaces the config of the stack file at `out` with the estate's, keeping what `pulumi stack
 * init` put there (the passphrase salt).
 */
export function writeEstateStack(
  out: string,
  kvmHostKey: string,
  servers: readonly LabNode[],
): void {
  const existing = fs.existsSync(out)
    ? ((YAML.parse(fs.readFileSync(out, "utf8")) ?? {}) as Record<string, unknown>)
    : {};
  const header =
    "# Written by the e2e adoption tests for the lab's hand-built estate; removed after them.\n";
  fs.writeFileSync(
    out,
    header + YAML.stringify({ ...existing, config: estateStackConfig(kvmHostKey, servers) }),
  );
}
