/**
 * Access to the running lab for the real and e2e tiers, which run inside its operator namespace.
 * Every real and e2e test imports this module, and loading it refuses to go on anywhere else
 * (see refuseOutsideOperatorNamespace): outside that namespace the lab's addresses may be
 * someone's real network.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import {
  SSH_KEY_CONFIG,
  sshKeyFingerprint,
  useStackConfig,
} from "../../components/ssh/host-material";
import type { SshConnection } from "../../components/ssh/run-script";

export const LAB_PREFIX = process.env.RKE2R_LAB_PREFIX ?? "rke2r";
export const LAB_DIR = process.env.RKE2R_LAB_DIR ?? `/var/tmp/${LAB_PREFIX}-lab`;
/** The stack the lab wrote for its estate. */
export const LAB_STACK = process.env.RKE2R_LAB_STACK ?? "local";

/** A lab namespace by its role: "pod", "kvm", "n20", ... */
export function labNs(role: string): string {
  return `${LAB_PREFIX}-${role}`;
}

/**
 * Why this process is not in the lab's operator namespace, or undefined when it is. The lab names
 * it `<prefix>-op` (test/lab/lab); a named namespace is the object at /run/netns/<name>
 * (ip-netns(8), iproute2 6.1.0), and two processes share a namespace when the device and inode
 * of their /proc/<pid>/ns/net are the same (namespaces(7)).
 */
export function outsideOperatorNamespace(): string | undefined {
  const name = labNs("op");
  let operator: fs.Stats;
  try {
    operator = fs.statSync(path.join("/run/netns", name));
  } catch {
    return `the lab's operator namespace ${name} does not exist (no lab is up under the prefix "${LAB_PREFIX}")`;
  }
  let own: fs.Stats;
  try {
    own = fs.statSync("/proc/self/ns/net");
  } catch (err) {
    return `this process's network namespace cannot be read (${(err as Error).message})`;
  }
  if (own.dev !== operator.dev || own.ino !== operator.ino) {
    return `this process runs outside the lab's operator namespace ${name}`;
  }
  return undefined;
}

/** Throws, before any test sends a packet, when the tier runs outside the operator namespace. */
function refuseOutsideOperatorNamespace(): void {
  const why = outsideOperatorNamespace();
  if (why === undefined) return;
  const refusal = new Error(
    [
      `The real and e2e tiers run only inside the lab's operator namespace, which has no default`,
      `route and reaches only the lab's addresses; ${why}. Run them with one of:`,
      `  npm test                      (every tier: builds the lab, runs, takes it down)`,
      `  RKE2R_TIERS=real npm test     (or RKE2R_TIERS=e2e; the same, these tiers only)`,
      `  bash test/lab/lab up && bash test/lab/lab exec npx mocha --timeout 120000 bin/test/real/ssh.test.js`,
      `Give every command the same RKE2R_LAB_PREFIX to use a lab other than "rke2r"; run as root.`,
    ].join("\n"),
  );
  // The message is the whole story; a stack trace through mocha's loader would bury it.
  refusal.stack = `${refusal.name}: ${refusal.message}`;
  throw refusal;
}

refuseOutsideOperatorNamespace();
export const REPO = path.resolve(__dirname, "..", "..", "..");

export function operatorKey(): string {
  return fs.readFileSync(path.join(LAB_DIR, "keys", "operator_ed25519"), "utf8");
}

/**
 * What a step's state records for the operator key, with the key given to the providers as the
 * stack's `sshPrivateKey` the way Pulumi's configure call gives it.
 */
export function stepKey(): { sshKeyFingerprint: string } {
  const key = operatorKey();
  useStackConfig((name) => (name === SSH_KEY_CONFIG ? key : undefined));
  return { sshKeyFingerprint: sshKeyFingerprint(key) };
}

/** The ed25519 host key (type and key) of the sshd whose files are in `dir`. */
export function hostKeyIn(dir: string): string {
  return fs
    .readFileSync(path.join(dir, "ssh_host_ed25519_key.pub"), "utf8")
    .trim()
    .split(/\s+/)
    .slice(0, 2)
    .join(" ");
}

export function nodeConnection(octet: number): SshConnection {
  return {
    host: `192.168.122.${octet}`,
    port: 22,
    user: "root",
    hostKey: hostKeyIn(path.join(LAB_DIR, "nodes", `n${octet}`, "ssh")),
    privateKey: operatorKey(),
  };
}

export function kvmConnection(): SshConnection {
  return {
    host: "192.168.122.1",
    port: 22,
    user: "root",
    hostKey: hostKeyIn(path.join(LAB_DIR, "kvm", "ssh")),
    privateKey: operatorKey(),
  };
}

export interface Ran {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

export function run(command: string, args: readonly string[], timeoutMs = 60000): Ran {
  const started = Date.now();
  const r = spawnSync(command, args, { encoding: "utf8", timeout: timeoutMs });
  return {
    status: r.status ?? -1,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? "",
    ms: Date.now() - started,
  };
}

/** Runs a command in one of the lab's namespaces (the node's files are reached through LAB_DIR). */
export function inNamespace(ns: string, args: readonly string[], timeoutMs = 60000): Ran {
  return run("ip", ["netns", "exec", ns, ...args], timeoutMs);
}

/** `kubectl create service clusterip NAME --tcp=80:80` in namespace default, with the given kubectl. */
export function createClusterIpService(kubectl: (...args: string[]) => Ran, name: string): Ran {
  return kubectl("-n", "default", "create", "service", "clusterip", name, "--tcp=80:80");
}

export function lab(...args: string[]): Ran {
  return run("bash", [path.join(REPO, "test", "lab", "lab"), ...args], 120000);
}

/** Runs virsh on the lab's KVM host, as an administrator would by hand. */
export function virsh(...args: string[]): Ran {
  const pid = fs.readFileSync(path.join(LAB_DIR, "kvm", "libvirtd.pid"), "utf8").trim();
  return run("nsenter", [
    "--target",
    pid,
    "--mount",
    "--net",
    "virsh",
    "-c",
    "qemu:///system",
    ...args,
  ]);
}

/** Deletes the network's DNS record for an address by hand (by IP: a hostname matches them all). */
export function handDeleteDnsHost(ip: string): void {
  const xml = `<host ip='${ip}'/>`;
  const r = virsh("net-update", "default", "delete", "dns-host", xml, "--live", "--config");
  assert.equal(r.status, 0, r.stderr);
}

/** Adds a DNS record to the network by hand. */
export function handAddDnsHost(ip: string, hostname: string): void {
  const xml = `<host ip='${ip}'><hostname>${hostname}</hostname></host>`;
  const r = virsh("net-update", "default", "add-last", "dns-host", xml, "--live", "--config");
  assert.equal(r.status, 0, r.stderr);
}

/** The A records the libvirt host's dnsmasq gives for a name. */
export function digA(name: string): string[] {
  return run("dig", ["+short", "+time=2", "+tries=1", "@192.168.122.1", name])
    .stdout.split("\n")
    .filter(Boolean)
    .sort();
}

/** Where the systemctl double keeps a unit's state on a node. */
function unitDir(octet: number, unit: string): string {
  return path.join(LAB_DIR, "nodes", `n${octet}`, "var-lib", "systemctl-double", "units", unit);
}

/** The systemctl double's record of a unit on a node. */
export function unitState(
  octet: number,
  unit: string,
): { enabled: boolean; active: boolean; history: string[] } {
  const dir = unitDir(octet, unit);
  const history = fs.existsSync(path.join(dir, "history"))
    ? fs.readFileSync(path.join(dir, "history"), "utf8").trim().split("\n").filter(Boolean)
    : [];
  return {
    enabled: fs.existsSync(path.join(dir, "enabled")),
    active: fs.existsSync(path.join(dir, "active")),
    history,
  };
}

/** The systemctl double's log of a unit on a node: what the unit's process printed. */
export function unitLog(octet: number, unit: string): string {
  return path.join(unitDir(octet, unit), "log");
}

export function nodeFile(octet: number, file: string): string {
  return path.join(
    LAB_DIR,
    "nodes",
    `n${octet}`,
    file
      .replace(/^\/etc\//, "etc/")
      .replace(/^\/var\/lib\//, "var-lib/")
      .replace(/^\/var\/log\//, "var-log/")
      .replace(/^\/usr\/local\/bin\//, "usr-local-bin/"),
  );
}

/** iptables-save of a node without counters and comments lines, for before/after comparison. */
export function ruleset(octet: number, tool: "iptables" | "ip6tables" = "iptables"): string[] {
  const r = inNamespace(labNs(`n${octet}`), [`${tool}-save`]);
  if (r.status !== 0) throw new Error(`${tool}-save failed: ${r.stderr}`);
  return r.stdout
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => l.replace(/\[\d+:\d+\]/, "[0:0]"));
}

/** Puts Rocky's INPUT REJECT rule back on a node by hand, as a drifted node would have it. */
export function addRejectRule(octet: number): void {
  const r = inNamespace(labNs(`n${octet}`), [
    "iptables",
    "-A",
    "INPUT",
    "-j",
    "REJECT",
    "--reject-with",
    "icmp-host-prohibited",
  ]);
  if (r.status !== 0) throw new Error(`could not add the REJECT rule on .${octet}: ${r.stderr}`);
}

/** Every file under `dirs` on a lab node (host paths), as "<path> <mtime> <size>", sorted. */
export function filesUnder(octet: number, dirs: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else found.push(`${full} ${fs.statSync(full).mtimeMs} ${fs.statSync(full).size}`);
    }
  };
  for (const dir of dirs) walk(nodeFile(octet, dir));
  return found.sort();
}

/** etcd's member list on the first server (JSON; `isLearner` is present only when true). */
export function etcdMembers(): {
  ID: string;
  name: string;
  isLearner?: boolean;
  peerURLs: string[];
}[] {
  const r = inNamespace(labNs("n20"), [
    "etcdctl",
    "--endpoints",
    "http://192.168.122.20:2379",
    "member",
    "list",
    "-w",
    "json",
  ]);
  if (r.status !== 0) throw new Error(`etcdctl member list on .20 failed: ${r.stderr}`);
  // (Member IDs are 64-bit: read them as strings.)
  const json = r.stdout.replace(/"ID":(\d+)/g, '"ID":"$1"');
  return (JSON.parse(json) as { members: { ID: string; name: string; peerURLs: string[] }[] })
    .members;
}
