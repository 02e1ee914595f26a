/**
 * STAND-IN for Rancher's cluster agent (`cattle-cluster-agent`) of downstream clusters — not
 * Rancher's agent. Pods cannot run in the lab, so this process plays the agent's pod: it runs in
 * the lab's pod namespace (a pod's network view: its resolv.conf is kubelet's, with the cluster
 * DNS as nameserver, the cluster search domains plus the node's own, ndots:5) and:
 *   - starts the agent on a downstream node once that node's RKE2 server unit runs and Rancher's
 *     plan put the agent's manifest there (rancher/rancher@v2.14.3:pkg/capr/planner/manifests.go
 *     getClusterAgentManifestFile: `<data dir>/server/manifests/rancher/cluster-agent.yaml`, on
 *     control-plane machines; RKE2 applies it and the Deployment's pod runs on that node);
 *   - resolves Rancher's host as a Go program does with that resolv.conf: the names of the
 *     search list first (fewer dots than ndots), then the name itself; a query that times out
 *     ends the lookup with "i/o timeout" (seed 000: the resolver stopped at ai-ear.cn.local and
 *     never queried the absolute name), NXDOMAIN everywhere is "no such host";
 *   - when it resolves, checks Rancher's CA against CATTLE_CA_CHECKSUM (package/run.sh) and
 *     connects to Rancher (cmd/agent/main.go: wss://<host>/v3/connect/register, here an HTTPS
 *     POST with the same X-API-Tunnel-Token), which makes the cluster "agent connected";
 *   - logs as the agent does into the node's kubelet log file of the pod's container
 *     (`/var/log/pods/cattle-system_cattle-cluster-agent-<rs>-<id>_<uid>/cluster-register/0.log`,
 *     CRI format `<time> stderr F <line>`; container name from pkg/systemtemplate/template.go):
 *     run.sh's "Using resolv.conf", cmd/agent/main.go's "Connecting to wss://... with token
 *     starting with <first half of the token>" (upstream logs half the token), and on failure
 *     seed 000's line "Failed to dial steve aggregation server: dial tcp: lookup <host>: i/o
 *     timeout"; then retries every 5 s (cmd/agent/main.go loop).
 *
 *   node cluster-agent.js --nodes <lab dir>/nodes [--resolv /etc/resolv.conf]
 */
import { createHash, randomBytes } from "crypto";
import { Resolver } from "dns/promises";
import * as fs from "fs";
import * as https from "https";
import * as path from "path";
import { flags } from "./cli-flags";

interface Manifest {
  env: { CATTLE_SERVER: string; CATTLE_CA_CHECKSUM?: string };
  credentials: { url: string; token: string };
}

interface Pod {
  node: string;
  logFile: string;
  connected: boolean;
  nextAttempt: number;
}

const args = flags(process.argv.slice(2));
const nodesDir = args.get("nodes")!;
const resolvPath = args.get("resolv") ?? "/etc/resolv.conf";
const MANIFEST = "var-lib/rancher/rke2/server/manifests/rancher/cluster-agent.yaml";
const pods = new Map<string, Pod>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pod's resolv.conf: a pod of cattle-system gets its namespace first in the search list. */
function podResolvConf(): { nameserver: string; search: string[]; ndots: number; text: string } {
  const text = fs
    .readFileSync(resolvPath, "utf8")
    .replace(/^search (\S+?)\.svc\./m, "search cattle-system.svc.");
  const nameserver = /^nameserver\s+(\S+)/m.exec(text)?.[1] ?? "";
  const search = (/^search\s+(.+)$/m.exec(text)?.[1] ?? "").trim().split(/\s+/).filter(Boolean);
  const ndots = Number(/ndots:(\d+)/.exec(text)?.[1] ?? "1");
  return { nameserver, search, ndots, text };
}

/** A Go-style lookup of host A records through the pod's resolver. */
async function lookup(host: string): Promise<{ addresses: string[] } | { error: string }> {
  const conf = podResolvConf();
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers([conf.nameserver]);
  const dots = host.split(".").length - 1;
  const searched = conf.search.map((d) => `${host}.${d}`);
  const names = dots >= conf.ndots ? [host, ...searched] : [...searched, host];
  for (const name of names) {
    try {
      const addresses = await resolver.resolve4(name);
      if (addresses.length > 0) return { addresses };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "ETIMEOUT" || code === "ECONNREFUSED" || code === "ESERVFAIL")
        return { error: `dial tcp: lookup ${host}: i/o timeout` };
    }
  }
  return { error: `dial tcp: lookup ${host}: no such host` };
}

function post(
  address: string,
  host: string,
  route: string,
  headers: Record<string, string>,
  ca?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: address,
        servername: host,
        port: 443,
        path: route,
        method: route === "/v3/settings/cacerts" ? "GET" : "POST",
        headers,
        ca,
        rejectUnauthorized: ca !== undefined,
        timeout: 10000,
      },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("i/o timeout")));
    req.on("error", reject);
    req.end();
  });
}

function log(pod: Pod, level: string, msg: string): void {
  const now = new Date().toISOString();
  const line = `time="${now}" level=${level} msg="${msg}"`;
  fs.appendFileSync(pod.logFile, `${now} stderr F ${line}\n`);
}

async function connect(pod: Pod, manifest: Manifest): Promise<void> {
  const server = new URL(manifest.env.CATTLE_SERVER);
  const token = manifest.credentials.token;
  log(pod, "info", `Using resolv.conf: ${podResolvConf().text.replace(/\s+/g, " ").trim()}`);
  log(
    pod,
    "info",
    `Connecting to wss://${server.host}/v3/connect/register with token starting with ${token.slice(0, token.length / 2)}`,
  );
  const found = await lookup(server.hostname);
  if ("error" in found) {
    log(pod, "error", `Failed to dial steve aggregation server: ${found.error}`);
    return;
  }
  for (const address of found.addresses) {
    try {
      // run.sh takes the cacerts setting's value as `jq -r` prints it (the value and a newline)
      // and hashes that file (rancher/rancher@v2.14.3 package/run.sh).
      const setting = await post(address, server.hostname, "/v3/settings/cacerts", {});
      const value = (JSON.parse(setting.body) as { value?: string }).value ?? "";
      const cacerts = { body: `${value}\n` };
      const expected = manifest.env.CATTLE_CA_CHECKSUM;
      if (expected && value === "") {
        log(
          pod,
          "error",
          `The environment variable CATTLE_CA_CHECKSUM is set but there is no CA certificate configured at ${server.origin}/v3/settings/cacerts`,
        );
        return;
      }
      const checksum = createHash("sha256").update(cacerts.body).digest("hex");
      if (expected && checksum !== expected) {
        log(
          pod,
          "error",
          `Configured cacerts checksum (${checksum}) does not match given --ca-checksum (${expected})`,
        );
        return;
      }
      const reply = await post(
        address,
        server.hostname,
        "/v3/connect/register",
        { "X-API-Tunnel-Token": token },
        cacerts.body,
      );
      if (reply.status === 200) {
        log(pod, "info", "Connected to proxy");
        pod.connected = true;
        return;
      }
      log(pod, "error", `Failed to connect to proxy: ${reply.status}`);
    } catch (err) {
      log(
        pod,
        "error",
        `Failed to dial steve aggregation server: dial tcp ${address}:443: ${(err as Error).message}`,
      );
    }
  }
}

function running(nodeDir: string): boolean {
  const unit = path.join(nodeDir, "var-lib/systemctl-double/units/rke2-server.service");
  if (!fs.existsSync(path.join(unit, "active"))) return false;
  try {
    process.kill(Number(fs.readFileSync(path.join(unit, "pid"), "utf8").trim()), 0);
    return true;
  } catch {
    return false;
  }
}

function podFor(node: string, manifest: Manifest): Pod {
  const key = `${manifest.credentials.token}`;
  let pod = pods.get(key);
  if (!pod || pod.node !== node) {
    const rs = createHash("sha256").update(key).digest("hex").slice(0, 10);
    const id = randomBytes(3).toString("hex").slice(0, 5);
    const uid = [8, 4, 4, 4, 12].map((n) => randomBytes(n).toString("hex").slice(0, n)).join("-");
    const dir = path.join(
      nodesDir,
      node,
      "var-log/pods",
      `cattle-system_cattle-cluster-agent-${rs}-${id}_${uid}`,
      "cluster-register",
    );
    fs.mkdirSync(dir, { recursive: true });
    pod = { node, logFile: path.join(dir, "0.log"), connected: false, nextAttempt: 0 };
    pods.set(key, pod);
  }
  return pod;
}

async function main(): Promise<void> {
  for (;;) {
    const seen = new Set<string>();
    for (const node of fs.existsSync(nodesDir) ? fs.readdirSync(nodesDir).sort() : []) {
      const file = path.join(nodesDir, node, MANIFEST);
      if (!fs.existsSync(file) || !running(path.join(nodesDir, node))) continue;
      const manifest = JSON.parse(fs.readFileSync(file, "utf8")) as Manifest;
      const key = manifest.credentials.token;
      if (seen.has(key)) continue; // one agent pod per cluster
      seen.add(key);
      const current = pods.get(key);
      const pod =
        current && running(path.join(nodesDir, current.node)) ? current : podFor(node, manifest);
      if (pod.connected || Date.now() < pod.nextAttempt) continue;
      await connect(pod, manifest);
      pod.nextAttempt = Date.now() + 5000;
    }
    for (const key of [...pods.keys()]) if (!seen.has(key)) pods.delete(key);
    await sleep(1000);
  }
}

void main();
