/**
 * `nodes`, their roles, `deploy` and `nodePreparation`: the readers, the servers of each
 * cluster, and the addresses no node can have.
 */
import {
  ClusterSettings,
  DeploySelection,
  MANAGEMENT_CLUSTER,
  NodePreparationSettings,
  NodeRole,
  NodeSpec,
} from "../../components/model";
import { keyIsRead } from "./deploy-parts";
import { ConfigReader } from "./reader";
import { DEPLOY_KEYS, NODE_KEYS, NODE_PREPARATION_KEYS, readSettings } from "./stack-keys";
import { unmanagedDevicesProblems } from "../../components/node-preparation/render";
import { addressNoNodeCanHave } from "./network-checks";
import { readPassThrough } from "./pass-through";
import { readSsh } from "./ssh-section";
import { ALL_ROLES, DOWNSTREAM, EstateFacts, hostnameOf, ipOf, nodeIndex } from "./values";

/**
 * `nodes`: required, each with its SSH host key, while a part of the stack's selection works on
 * nodes; a node's roles, while a part needs them (`rolesRequired`).
 */
export function readNodes(
  r: ConfigReader,
  value: unknown,
  clusters: ClusterSettings[],
  deploy: DeploySelection,
): NodeSpec[] {
  const required = keyIsRead(deploy, "nodes");
  const list = r.array(value, "nodes");
  if (!list || list.length === 0) {
    if (required)
      r.problem("nodes", "lists no nodes; add the RKE2 servers (role: server) at least.");
    return [];
  }
  const clusterNames = clusters.map((c) => c.name);
  const nodes: NodeSpec[] = [];
  const names = new Map<string, number>();
  const ips = new Map<string, number>();
  list.forEach((item, i) => {
    const path = `nodes[${i}]`;
    const o = r.object(item, path);
    if (!o) return;
    // A node name is a DNS subdomain, compared in lowercase: Kubernetes accepts only lowercase
    // RFC 1123 subdomains as node names (kubernetes/kubernetes@v1.35.4:
    // pkg/apis/core/validation/validation.go, ValidateNodeName = NameIsDNSSubdomain;
    // k8s.io/apimachinery@v0.35.4:pkg/util/validation/validation.go, IsDNS1123Subdomain).
    const v = readSettings(r, NODE_KEYS, o, path);
    let name = hostnameOf(r, v.name, `${path}.name`);
    if (o.name === undefined) r.problem(`${path}.name`, "is missing; set the node's hostname.");
    if (name !== undefined && v.name !== name) {
      r.problem(
        `${path}.name`,
        `"${v.name}" has capitals; a Kubernetes node name is lower case, and RKE2 registers the ` +
          `host name lowercased. Write "${name}".`,
      );
      name = undefined;
    }
    const ip = ipOf(r, v.ip, `${path}.ip`);
    if (o.ip === undefined) r.problem(`${path}.ip`, "is missing; set the node's address.");
    if (name !== undefined) {
      if (names.has(name)) {
        r.problem(
          `${path}.name`,
          `"${name}" is also nodes[${names.get(name)}]; node names must be unique` +
            (typeof o.name === "string" && o.name.trim() !== name
              ? " (Kubernetes node names are lowercase, so names differing only in case are one node)."
              : "."),
        );
      } else names.set(name, i);
    }
    if (ip !== undefined) {
      if (ips.has(ip)) {
        r.problem(
          `${path}.ip`,
          `${ip} is also nodes[${ips.get(ip)}].ip; node addresses must be unique.`,
        );
      } else ips.set(ip, i);
    }
    const cluster = v.cluster;
    if (!clusterNames.includes(cluster)) {
      r.problem(
        `${path}.cluster`,
        `"${cluster}" is not a known cluster; use "${MANAGEMENT_CLUSTER}" or a name from rancher.downstreamClusters.`,
      );
    }
    const roles = readRoles(r, o, path, cluster, rolesRequired(deploy, cluster), clusterNames);
    // An invalid ip is reported above; do not also report the SSH host it would have given.
    const sshDefault = ip ?? (o.ip === undefined ? undefined : "");
    const ssh = readSsh(r, o.ssh, `${path}.ssh`, sshDefault, `node ${name ?? path}`, required);
    const extraConfig = readPassThrough(r, o.extraConfig, `${path}.extraConfig`);
    if (name && ip && ssh && roles)
      nodes.push({ name, ip, cluster, roles, ssh, ...(extraConfig ? { extraConfig } : {}) });
  });
  return nodes;
}

/**
 * Whether a node's roles must be given: a management node's where RKE2 starts the servers or
 * the DNS fix goes to the first one, a downstream node's where Rancher registers it. (Node
 * preparation reads management roles where given, for the ports check between servers.)
 */
function rolesRequired(deploy: DeploySelection, cluster: string): boolean {
  return cluster === MANAGEMENT_CLUSTER
    ? deploy.rke2Servers || deploy.clusterDns
    : deploy.rancherClusters;
}

function readRoles(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  cluster: string,
  required: boolean,
  clusterNames: readonly string[],
): NodeRole[] | undefined {
  const rawRoles = o.roles ?? (o.role === undefined ? undefined : [o.role]);
  const rolesPath = o.roles !== undefined ? `${path}.roles` : `${path}.role`;
  if (rawRoles === undefined && !required) return [];
  const list = r.stringList(rawRoles, rolesPath);
  if (!list || list.length === 0) {
    r.problem(
      rolesPath,
      "is missing; give the node a role (server or agent; etcd, controlplane, worker downstream).",
    );
    return undefined;
  }
  const unknown = list.filter((role) => !(ALL_ROLES as readonly string[]).includes(role));
  if (unknown.length > 0) {
    r.problem(
      rolesPath,
      `unknown role(s) ${unknown.map((u) => `"${u}"`).join(", ")}; use one of ${ALL_ROLES.join(", ")}.`,
    );
    return undefined;
  }
  const roles = list as NodeRole[];
  if (cluster === MANAGEMENT_CLUSTER) {
    if (roles.length !== 1 || !(roles[0] === "server" || roles[0] === "agent")) {
      const node = typeof o.name === "string" ? `node ${o.name}: ` : "";
      const downstream = clusterNames.filter((c) => c !== MANAGEMENT_CLUSTER);
      // Downstream roles on a node without `cluster:` are most likely a missing `cluster:`.
      const hint =
        o.cluster === undefined &&
        roles.every((role) => (DOWNSTREAM as readonly string[]).includes(role))
          ? ` These are a downstream cluster's roles, and the node has no ${path}.cluster, so it ` +
            `counts as a node of the management cluster: set its cluster` +
            (downstream.length > 0 ? ` (${downstream.map((c) => `"${c}"`).join(", ")})` : "") +
            ", or give it role server or agent."
          : "";
      r.problem(
        rolesPath,
        `${node}nodes of the management cluster are either "server" or "agent", found ${roles.join(", ")}.${hint}`,
      );
      return undefined;
    }
  } else if (roles.some((role) => !(DOWNSTREAM as readonly string[]).includes(role))) {
    r.problem(
      rolesPath,
      `nodes of downstream cluster "${cluster}" take roles from ${DOWNSTREAM.join(", ")}.`,
    );
    return undefined;
  }
  return roles;
}

export function readNodePreparation(r: ConfigReader, value: unknown): NodePreparationSettings {
  const o = r.object(value, "nodePreparation") ?? {};
  const settings = readSettings(r, NODE_PREPARATION_KEYS, o, "nodePreparation");
  for (const p of unmanagedDevicesProblems(settings.unmanagedDevices)) {
    const index = p.index === undefined ? "" : `[${p.index}]`;
    r.problem(`nodePreparation.unmanagedDevices${index}`, p.message);
  }
  return settings;
}

export function readDeploy(r: ConfigReader, value: unknown): DeploySelection {
  // Keys other than these are reported by checkKnownKeys.
  return readSettings(r, DEPLOY_KEYS, r.object(value, "deploy") ?? {}, "deploy");
}

export function checkServers(
  r: ConfigReader,
  nodes: NodeSpec[],
  allNodesRead: boolean,
  deploy: DeploySelection,
): void {
  // Counting is only meaningful when every entry was read; a broken entry is reported on its own.
  if (!allNodesRead) return;
  const servers = nodes.filter(
    (n) => n.cluster === MANAGEMENT_CLUSTER && n.roles.includes("server"),
  );
  if (
    servers.length === 0 &&
    rolesRequired(deploy, MANAGEMENT_CLUSTER) &&
    nodes.some((n) => n.cluster === MANAGEMENT_CLUSTER)
  ) {
    r.problem(
      "nodes",
      'has no node with role "server" in the management cluster; RKE2 needs at least one.',
    );
  }
  if (servers.length > 0 && servers.length % 2 === 0) {
    r.problem(
      "nodes",
      `has ${servers.length} servers; etcd needs an odd number of members to keep quorum.`,
    );
  }
}

export function checkNodeAddresses(
  r: ConfigReader,
  facts: EstateFacts,
  gateway: string | undefined,
): void {
  for (const node of facts.nodes) {
    const why = addressNoNodeCanHave(node.ip, facts, gateway);
    if (why) {
      r.problem(
        `nodes[${nodeIndex(facts.raw.values, node)}].ip`,
        `${why}; set the address node ${node.name} has on the libvirt network (\`ip -4 addr\` on the node).`,
      );
    }
  }
}
