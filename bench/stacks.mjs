/* global process, console */
/**
 * Stack files for bench/run.
 *
 *   node bench/stacks.mjs subset --template <stack yaml> --first 5 [--rke2-servers true] [--bin <dir>] --out <yaml>
 *     The lab's stack with only its first N nodes (in the order RKE2R_LAB_NODES lists them); deploys libvirt DNS records, node
 *     preparation (with the server ports preflight) and cluster DNS, no Rancher, and RKE2 on the
 *     management servers only with --rke2-servers true (their apiserver then runs). Without
 *     a downstream etcd and control-plane node the `rancher` key is dropped (uat1 needs both).
 *     Keys that only the parts turned off read are removed, so the program measured logs no
 *     "is unused" warning per downstream node (the product's own table of readers, from the
 *     compiled program in --bin, default bin/). Encryption salt and the secrets of the parts kept
 *     stay, so the stack's secrets still decrypt.
 *
 *   node bench/stacks.mjs scale --from stacks/Pulumi.lab.yaml --downstream stacks/Pulumi.uat1.yaml
 *       --nodes 300 [--deploy hosts] --out <yaml>
 *     The seeds' estate in one stack (the lab stack with the uat1 stack's nodes and cluster)
 *     grown to N nodes for `npm run verify -- --file`: 3 management servers
 *     (1 below 5 nodes), uat1's etcd+controlplane node, then management agents and uat1 workers
 *     taking turns. Node network widened to 192.168.0.0/16 for every size (a /24 holds 253 hosts);
 *     cluster and service CIDRs stay 10.x and disjoint. Host keys are placeholders of the right
 *     form, as in stacks/Pulumi.lab.yaml: an ed25519 key blob whose 32 key bytes spell
 *     PLACEHOLDER-<host>. With --deploy hosts only the per-node parts are on (libvirt records,
 *     node preparation, RKE2 on the management nodes), for `pulumi preview` of the stack.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import YAML from "yaml";

const NS = "rke2-remediation";

function flags(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || argv[i + 1] === undefined)
      throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  return out;
}

function u32(n) {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** "ssh-ed25519 AAAA..." whose key bytes spell PLACEHOLDER-<host>, padded with '-'. */
export function placeholderHostKey(host) {
  const key = Buffer.from(`PLACEHOLDER-${host}`.padEnd(32, "-").slice(0, 32), "ascii");
  const type = Buffer.from("ssh-ed25519", "ascii");
  const blob = Buffer.concat([u32(type.length), type, u32(key.length), key]);
  return `ssh-ed25519 ${blob.toString("base64")}`;
}

const lastOctet = (ip) => ip.split(".").pop();

function subset(f) {
  const doc = YAML.parse(fs.readFileSync(f.template, "utf8"));
  const config = doc.config;
  const first = Number(f.first);
  const all = config[`${NS}:nodes`];
  if (!Number.isInteger(first) || first < 1 || first > all.length)
    throw new Error(`--first must be 1..${all.length}, the template's node count`);
  const nodes = all.slice(0, first);
  config[`${NS}:nodes`] = nodes;
  const downstream = nodes.filter((n) => n.cluster && n.cluster !== "management");
  const roles = new Set(downstream.flatMap((n) => n.roles ?? []));
  if (!(roles.has("etcd") && roles.has("controlplane"))) {
    config[`${NS}:nodes`] = nodes.filter((n) => !n.cluster || n.cluster === "management");
  }
  // Rancher runs on the management servers, and its names must list exactly the servers kept
  // (the validation refuses names that send agents elsewhere).
  const servers = config[`${NS}:nodes`].filter((n) => n.role === "server").map((n) => n.ip);
  for (const names of [config[`${NS}:dns`]?.staticHosts, config[`${NS}:libvirt`]?.dnsRecords]) {
    for (const name of Object.keys(names ?? {})) {
      if (names[name].some((ip) => servers.includes(ip)))
        names[name] = names[name].filter((ip) => servers.includes(ip));
    }
  }
  config[`${NS}:deploy`] = {
    libvirtDnsRecords: true,
    nodePreparation: true,
    rke2Servers: f["rke2-servers"] === "true",
    clusterDns: true,
    rancherClusters: false,
  };
  pruneUnused(config, f.bin ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../bin"));
  const octets = config[`${NS}:nodes`].map((n) => lastOctet(n.ip)).join(" ");
  const header = `# Written by bench/stacks.mjs subset: the lab's stack with nodes ${octets}.\n`;
  fs.writeFileSync(
    f.out,
    header + YAML.stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false }),
  );
}

/**
 * Removes every key of the namespace that the stack's `deploy` selection leaves unused, as the
 * program's validation finds them (`unusedKeys`, infra/config/deploy-parts.ts).
 */
function pruneUnused(config, bin) {
  const require = createRequire(import.meta.url);
  const { unusedKeys } = require(path.resolve(bin, "infra/config/deploy-parts.js"));
  const values = {};
  const secretKeys = new Set();
  for (const [key, value] of Object.entries(config)) {
    if (!key.startsWith(`${NS}:`)) continue;
    const bare = key.slice(NS.length + 1);
    if (value !== null && typeof value === "object" && "secure" in value) secretKeys.add(bare);
    else values[bare] = value;
  }
  const deploy = config[`${NS}:deploy`];
  for (const { path: keyPath } of unusedKeys(values, secretKeys, deploy)) {
    const steps = keyPath.match(/[^.[\]]+/g);
    const last = steps.pop();
    if (steps.length === 0) {
      delete config[`${NS}:${last}`];
      continue;
    }
    let parent = config[`${NS}:${steps[0]}`];
    for (const step of steps.slice(1)) parent = parent[/^\d+$/.test(step) ? Number(step) : step];
    delete parent[last];
  }
}

function scale(f) {
  const n = Number(f.nodes);
  if (!Number.isInteger(n) || n < 3) throw new Error("--nodes must be an integer >= 3");
  const doc = YAML.parse(fs.readFileSync(f.from, "utf8"));
  const config = doc.config;
  if (f.downstream === undefined) throw new Error("--downstream <the uat1 stack file> is required");
  const downstream = YAML.parse(fs.readFileSync(f.downstream, "utf8")).config;
  config[`${NS}:nodes`].push(...downstream[`${NS}:nodes`]);
  config[`${NS}:rancher`].downstreamClusters = downstream[`${NS}:rancher`].downstreamClusters;
  const lab = config[`${NS}:nodes`];
  const labServers = lab.filter((x) => x.role === "server");
  const labEtcd = lab.find((x) => (x.roles ?? []).includes("etcd"));
  const servers = labServers.slice(0, n < 5 ? 1 : 3);
  const nodes = [...servers, labEtcd];
  const used = new Set(nodes.map((x) => x.ip));
  for (let i = 0; nodes.length < n; i++) {
    const third = 123 + Math.floor(i / 250);
    const fourth = 2 + (i % 250);
    const ip = `192.168.${third}.${fourth}`;
    if (used.has(ip)) continue;
    const host = `sza${third}${String(fourth).padStart(3, "0")}`;
    const base = { name: `${host}.local`, ip };
    const ssh = { hostKey: placeholderHostKey(host) };
    nodes.push(
      i % 2 === 0
        ? { ...base, cluster: "uat1", roles: ["worker"], ssh }
        : { ...base, role: "agent", ssh },
    );
  }
  const serverIps = servers.map((x) => x.ip);
  config[`${NS}:nodes`] = nodes;
  config[`${NS}:libvirt`].subnet = "192.168.0.0/16";
  config[`${NS}:libvirt`].dnsRecords = { "ai-ear.cn": serverIps };
  config[`${NS}:rke2`].tlsSan = serverIps;
  config[`${NS}:dns`].staticHosts = { "ai-ear.cn": serverIps };
  if (f.deploy === "hosts") {
    // The parts whose resources are per node and reach only hosts: nothing in a preview needs
    // the management cluster's API or Rancher.
    config[`${NS}:deploy`] = {
      libvirtDnsRecords: true,
      nodePreparation: true,
      rke2Servers: true,
      clusterDns: false,
      rancherClusters: false,
    };
  } else if (f.deploy !== undefined) throw new Error("--deploy takes hosts");
  const header = `# Written by bench/stacks.mjs scale: ${f.from} with ${f.downstream}'s cluster, grown to ${n} nodes (placeholder host keys).\n`;
  fs.writeFileSync(
    f.out,
    header + YAML.stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false }),
  );
}

const [command, ...rest] = process.argv.slice(2);
try {
  if (command === "subset") subset(flags(rest));
  else if (command === "scale") scale(flags(rest));
  else throw new Error("usage: node bench/stacks.mjs subset|scale --flag value ...");
} catch (err) {
  console.error(`stacks.mjs: ${err.message}`);
  process.exit(1);
}
