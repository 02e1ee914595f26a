import type { NodeFacts } from "../../components/rke2-cluster/start-plan";
import type { NodeStartInputs, NodeStartState } from "../../components/rke2-cluster/provider";
/**
 * Changes to the one compliant fixture every unit test starts from, the seeds' whole estate in
 * one stack (test/support/lab-stack.ts `estateRawConfig`). Cases change one field of a deep copy.
 */
import * as assert from "assert/strict";
import { SECRET_KEYS } from "../../components/model";
import { ConfigProblem } from "../../infra/config/problems";
import {
  CONFIG_NAMESPACE,
  RawStackConfig,
  validateEnvironment,
  ValidationOptions,
} from "../../infra/config/validate";
import { estateRawConfig, MutableRawConfig } from "../support/lab-stack";

/** A path into the values: `"nodes[1].ssh.hostKey"`, or segments when a key contains dots. */
export type ConfigPath = string | readonly (string | number)[];

/** The estate config with every secret recorded as a Pulumi secret, as a deployable stack has. */
export function estateRawConfigWithSecrets(): MutableRawConfig {
  const raw = estateRawConfig();
  for (const key of SECRET_KEYS) raw.secretKeys.add(key);
  return raw;
}

/** The estate config with one value replaced; `undefined` removes the key. */
export function estateWith(path: ConfigPath, value: unknown): MutableRawConfig {
  return setAt(estateRawConfig(), path, value);
}

/** Sets (or, with `undefined`, deletes) the value at `path`, creating maps on the way. */
export function setAt(raw: MutableRawConfig, path: ConfigPath, value: unknown): MutableRawConfig {
  const segments = typeof path === "string" ? parsePath(path) : path;
  assert.ok(segments.length > 0, "a config path needs at least one segment");
  let container: Record<string | number, unknown> = raw.values;
  for (const segment of segments.slice(0, -1)) {
    const next = container[segment];
    if (typeof next !== "object" || next === null) container[segment] = {};
    container = container[segment] as Record<string | number, unknown>;
  }
  const last = segments[segments.length - 1];
  if (value === undefined) {
    if (Array.isArray(container) && typeof last === "number") container.splice(last, 1);
    else delete container[last];
  } else {
    container[last] = value;
  }
  return raw;
}

/** The value at `path` in a config, for cases that derive the new value from the old one. */
export function getAt(raw: RawStackConfig, path: ConfigPath): unknown {
  const segments = typeof path === "string" ? parsePath(path) : path;
  let current: unknown = raw.values;
  for (const segment of segments) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

function parsePath(path: string): (string | number)[] {
  const segments: (string | number)[] = [];
  for (const part of path.split(".")) {
    const m = /^([^[\]]+)((?:\[\d+\])*)$/.exec(part);
    assert.ok(m, `cannot parse config path "${path}"`);
    segments.push(m[1]);
    for (const index of m[2].matchAll(/\[(\d+)\]/g)) segments.push(Number(index[1]));
  }
  return segments;
}

/** The full stack key a problem is reported under, e.g. `rke2-remediation:nodes[1].ip`. */
export function stackKey(path: string): string {
  return `${CONFIG_NAMESPACE}:${path}`;
}

export function problemsOf(
  raw: RawStackConfig,
  options: ValidationOptions = { requireSecrets: false },
): ConfigProblem[] {
  return validateEnvironment("lab", raw, options).problems;
}

/** A joining server .21 as rke2-facts.sh reports it: installed, running, with etcd data. */
export const RUNNING_SERVER_FACTS: NodeFacts = {
  version: "v1.35.6+rke2r1",
  unit: true,
  active: true,
  configSha256: "c1",
  configText: "node-ip: 192.168.122.21\n",
  dropIns: [],
  environment: [],
  tokenFiles: [],
  otherUnit: true,
  otherActive: false,
  dataDir: "/var/lib/rancher/rke2",
  hostName: "sza122021.local",
  addresses: ["127.0.0.1", "192.168.122.21"],
  etcdData: true,
  etcdName: "sza122021.local-4e5f6a7b",
  ownMembers: { error: "not read" },
};

/** A server's node-step inputs as the component builds them for 192.168.122.<octet>. */
export function nodeStartInputs(
  name: string,
  octet: number,
  more: Partial<NodeStartInputs> = {},
): NodeStartInputs {
  const ip = `192.168.122.${octet}`;
  return {
    node: name,
    nodeIp: ip,
    role: "server",
    connection: { host: ip, port: 22, user: "root", hostKey: "ssh-ed25519 AAAA" },
    sshKeyFingerprint: "SHA256:test",
    script: "start",
    factsScript: "facts",
    membersScript: "members",
    version: "v1.35.7+rke2r1",
    installCommand: "install",
    config: "token: t1\n",
    managedKeys: {},
    ...more,
  };
}

/** The state refresh records for those inputs when the host is as the stack wants it. */
export function foundNodeState(inputs: NodeStartInputs): NodeStartState {
  return {
    ...inputs,
    installedVersion: inputs.version,
    active: true,
    membership: "voter",
    restartPending: "",
    hostNodeName: inputs.node,
    dataDir: "/var/lib/rancher/rke2",
    startedAt: "t0",
    lastChanges: [],
  };
}
