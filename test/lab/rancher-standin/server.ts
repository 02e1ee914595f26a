/**
 * STAND-IN for Rancher's server — not Rancher. Rancher cannot run in the lab (it needs a
 * Kubernetes cluster), so this small HTTPS server answers the parts of Rancher that downstream
 * registration touches, with Rancher's behaviour where the product depends on it:
 *   - /cacerts serves the CA exactly as stored (the agent installer checks its SHA-256), /healthz,
 *     /system-agent-install.sh (the lab's installer stand-in) and the agent it downloads;
 *   - /v3/clusters (API token required): create (idempotent by name), get, update, delete a
 *     custom cluster with a registration token;
 *   - /v3/connect/register and /ready (registration token required), used by the agent stand-in:
 *     the first etcd node gets the init plan; every other node gets no plan until that node is
 *     ready and the cluster active — seed 000: later nodes wait on the control plane.
 * State is kept in a JSON file, so a restarted server keeps its clusters.
 *
 *   node server.js --listen 192.168.122.20:443 --dir <state dir with ca.pem, server.pem,
 *     server-key.pem, api-token> --installer <path> --agent <path>
 */
import { randomBytes } from "crypto";
import * as fs from "fs";
import * as http from "http";
import * as https from "https";
import * as path from "path";

interface NodeRecord {
  name: string;
  roles: string[];
  plan: string;
  ready: boolean;
}

interface Cluster {
  id: string;
  name: string;
  spec: Record<string, unknown>;
  registrationToken: string;
  state: "pending" | "active";
  initNode?: string;
  nodes: NodeRecord[];
}

function flags(argv: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) m.set(argv[i].replace(/^--/, ""), argv[i + 1]);
  return m;
}

const args = flags(process.argv.slice(2));
const dir = args.get("dir")!;
const stateFile = path.join(dir, "clusters.json");
const apiToken = fs.readFileSync(path.join(dir, "api-token"), "utf8").trim();
let clusters: Cluster[] = fs.existsSync(stateFile)
  ? (JSON.parse(fs.readFileSync(stateFile, "utf8")) as Cluster[])
  : [];
const save = () => fs.writeFileSync(stateFile, JSON.stringify(clusters, null, 2));

function planFor(cluster: Cluster, roles: readonly string[], node: string): string {
  const control = roles.includes("etcd") || roles.includes("controlplane");
  if (cluster.initNode === undefined && roles.includes("etcd")) cluster.initNode = node;
  if (cluster.initNode !== node && cluster.state !== "active") return "";
  return control ? "rke2-server" : "rke2-agent";
}

function view(c: Cluster) {
  return {
    id: c.id,
    name: c.name,
    state: c.state,
    spec: c.spec,
    registrationToken: c.registrationToken,
    nodes: c.nodes,
  };
}

type Reply = (status: number, body: unknown, type?: string) => void;

function handle(
  method: string,
  url: string,
  headers: http.IncomingHttpHeaders,
  body: string,
  reply: Reply,
): void {
  const file = (p: string, type: string) => reply(200, fs.readFileSync(p), type);
  if (method === "GET" && url === "/healthz") return reply(200, "ok", "text/plain");
  if (method === "GET" && url === "/cacerts") return file(path.join(dir, "ca.pem"), "text/plain");
  if (method === "GET" && url === "/system-agent-install.sh")
    return file(args.get("installer")!, "text/plain");
  if (method === "GET" && url === "/assets/rancher-system-agent")
    return file(args.get("agent")!, "application/octet-stream");
  const json = (body ? JSON.parse(body) : {}) as Record<string, unknown>;

  if (url.startsWith("/v3/connect/")) {
    const cluster = clusters.find((c) => c.registrationToken === json.token);
    if (!cluster) return reply(401, { message: "unknown registration token" });
    const name = String(json.node);
    let node = cluster.nodes.find((n) => n.name === name);
    if (url === "/v3/connect/register" && method === "POST") {
      const roles = (json.roles as string[]) ?? [];
      if (!node) cluster.nodes.push((node = { name, roles, plan: "", ready: false }));
      node.roles = roles;
      node.plan = node.plan || planFor(cluster, roles, name);
      save();
      return reply(200, { plan: node.plan });
    }
    if (url === "/v3/connect/ready" && method === "POST" && node) {
      node.ready = true;
      if (cluster.initNode === name) cluster.state = "active";
      save();
      return reply(200, { state: cluster.state });
    }
    return reply(404, { message: "not found" });
  }

  if (!url.startsWith("/v3/clusters")) return reply(404, { message: "not found" });
  if (headers.authorization !== `Bearer ${apiToken}`)
    return reply(401, { message: "a valid API token is required" });
  const id = url.split("/")[3];
  const cluster = clusters.find((c) => c.id === id);
  if (method === "POST" && id === undefined) {
    const name = String(json.name);
    let created = clusters.find((c) => c.name === name);
    if (!created) {
      created = {
        id: `c-m-${randomBytes(4).toString("hex")}`,
        name,
        spec: json,
        registrationToken: randomBytes(24).toString("hex"),
        state: "pending",
        nodes: [],
      };
      clusters.push(created);
      save();
    }
    return reply(201, view(created));
  }
  if (!cluster) return reply(404, { message: `cluster ${id} not found` });
  if (method === "GET") return reply(200, view(cluster));
  if (method === "PUT") {
    cluster.spec = json;
    save();
    return reply(200, view(cluster));
  }
  if (method === "DELETE") {
    clusters = clusters.filter((c) => c !== cluster);
    save();
    return reply(204, "");
  }
  return reply(405, { message: "method not allowed" });
}

const server = https.createServer(
  {
    cert: fs.readFileSync(path.join(dir, "server.pem")),
    key: fs.readFileSync(path.join(dir, "server-key.pem")),
  },
  (req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const reply: Reply = (status, payload, type = "application/json") => {
        res.writeHead(status, { "content-type": type });
        res.end(
          typeof payload === "string" || Buffer.isBuffer(payload)
            ? payload
            : JSON.stringify(payload),
        );
      };
      try {
        handle(req.method ?? "GET", req.url ?? "/", req.headers, body, reply);
      } catch (err) {
        reply(400, { message: (err as Error).message });
      }
    });
  },
);
const [host, port] = args.get("listen")!.split(":");
server.listen(Number(port), host, () => console.log(`rancher stand-in on ${host}:${port}`));
