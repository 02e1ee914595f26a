import {
  ClusterSettings,
  Cni,
  DEFAULT_UNMANAGED_DEVICES,
  DeploySelection,
  DnsSettings,
  DownstreamClusterSpec,
  DownstreamRole,
  EnvironmentModel,
  KubeProxyMode,
  LibvirtSettings,
  MANAGEMENT_CLUSTER,
  NodePreparationSettings,
  NodeRole,
  NodeSpec,
  RancherSettings,
  SECRET_KEYS,
  SshEndpoint,
} from "./model";
import { Cidr, cidrContains, cidrsOverlap, isIpv4, nthAddress, parseCidr } from "./net";
import { ConfigProblem, ConfigValidationError } from "./problems";
import { ConfigReader } from "./reader";

export const CONFIG_NAMESPACE = "rke2-remediation";

export interface RawStackConfig {
  /** Config values by key without the namespace; secret values are not needed here. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Keys (without namespace) whose values are stored as Pulumi secrets. */
  readonly secretKeys: ReadonlySet<string>;
}

export interface ValidationOptions {
  /** Deployments need every secret; offline render and verify run without them. */
  readonly requireSecrets: boolean;
}

const HOSTNAME =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;
const K8S_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const RKE2_VERSION = /^v1\.\d+\.\d+\+rke2r\d+$/;
const HOST_KEY =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521) [A-Za-z0-9+/]+={0,3}$/;
const LIBVIRT_NETWORK = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const CRON_FIELD = /^[\d*/,-]+$/;
const CNIS: readonly Cni[] = ["calico", "canal", "cilium", "flannel"];
const PROXY_MODES: readonly KubeProxyMode[] = ["ipvs", "iptables"];
const DOWNSTREAM_ROLES: readonly DownstreamRole[] = ["etcd", "controlplane", "worker"];
const ALL_ROLES: readonly NodeRole[] = ["server", "agent", ...DOWNSTREAM_ROLES];

export function isHostname(text: string): boolean {
  return HOSTNAME.test(text);
}

/** Validates the whole stack config, returning the model or every problem found. */
export function validateEnvironment(
  stack: string,
  raw: RawStackConfig,
  options: ValidationOptions,
): { model?: EnvironmentModel; problems: ConfigProblem[] } {
  const r = new ConfigReader(CONFIG_NAMESPACE);
  const v = raw.values;

  const libvirt = readLibvirt(r, v.libvirt);
  // A stack of downstream clusters only (no node in the management cluster) needs no `rke2`.
  const listsManagementNodes =
    !Array.isArray(v.nodes) ||
    v.nodes.some((n: unknown) => {
      const cluster = (n as { cluster?: unknown } | null)?.cluster;
      return cluster === undefined || cluster === MANAGEMENT_CLUSTER;
    });
  const management = readClusterSettings(
    r,
    v.rke2,
    "rke2",
    MANAGEMENT_CLUSTER,
    { clusterCidr: "10.42.0.0/16", serviceCidr: "10.43.0.0/16" },
    listsManagementNodes,
  );
  const rancher = readRancher(r, v.rancher);
  const clusters: ClusterSettings[] = [management, ...(rancher?.downstreamClusters ?? [])];
  const nodes = readNodes(r, v.nodes, clusters);
  const dns = readDns(r, v.dns);
  const nodePreparation = readNodePreparation(r, v.nodePreparation);
  const deploy = readDeploy(r, v.deploy);

  checkNetworks(r, libvirt, clusters);
  checkServers(r, nodes, management, Array.isArray(v.nodes) && nodes.length === v.nodes.length);
  checkDownstreamMembership(r, nodes, rancher);
  checkDnsAgainstNetworks(r, dns, libvirt, clusters, nodes);
  checkSecrets(r, raw, options, nodes, rancher, management);

  if (r.problems.length > 0 || !libvirt) return { problems: r.problems };
  return {
    model: { stack, deploy, libvirt, nodes, management, rancher, dns, nodePreparation },
    problems: [],
  };
}

/** Like validateEnvironment, but throws one error naming every problem. */
export function loadEnvironmentModel(
  stack: string,
  raw: RawStackConfig,
  options: ValidationOptions,
): EnvironmentModel {
  const { model, problems } = validateEnvironment(stack, raw, options);
  if (!model) throw new ConfigValidationError(stack, problems);
  return model;
}

function readIp(r: ConfigReader, value: unknown, path: string): string | undefined {
  const s = r.string(value, path);
  if (s === undefined) return undefined;
  if (!isIpv4(s)) {
    r.problem(
      path,
      `"${s}" is not an IPv4 address; write four dotted numbers, e.g. 192.168.122.21.`,
    );
    return undefined;
  }
  return s;
}

function readCidr(
  r: ConfigReader,
  value: unknown,
  path: string,
  fallback: string,
): Cidr | undefined {
  const text = value === undefined ? fallback : r.string(value, path);
  if (text === undefined) return undefined;
  const cidr = parseCidr(text);
  if (!cidr) {
    r.problem(
      path,
      `"${text}" is not a network in CIDR form; write the network address and prefix, e.g. 10.42.0.0/16.`,
    );
  }
  return cidr;
}

function readHostname(r: ConfigReader, value: unknown, path: string): string | undefined {
  const s = r.string(value, path);
  if (s === undefined) return undefined;
  if (!isHostname(s)) {
    r.problem(
      path,
      `"${s}" is not a valid DNS name; use letters, digits and hyphens in dot-separated labels of at most 63 characters.`,
    );
    return undefined;
  }
  return s.toLowerCase();
}

function readSsh(
  r: ConfigReader,
  value: unknown,
  path: string,
  defaultHost: string | undefined,
  who: string,
): SshEndpoint | undefined {
  const o = r.object(value, path) ?? {};
  const host = o.host === undefined ? defaultHost : r.string(o.host, `${path}.host`);
  const port = r.integer(o.port, `${path}.port`, 22, 1, 65535);
  const user = r.string(o.user, `${path}.user`) ?? "root";
  const hostKey = r.string(o.hostKey, `${path}.hostKey`);
  if (host === undefined) {
    r.problem(`${path}.host`, `is missing; set the SSH address of ${who}.`);
  }
  if (host === "") return undefined;
  if (hostKey === undefined) {
    if (o.hostKey === undefined) {
      r.problem(
        `${path}.hostKey`,
        `${who} has no pinned host key; SSH refuses unverified hosts. Read the key on the host ` +
          `(cat /etc/ssh/ssh_host_ed25519_key.pub) and set the whole line here.`,
      );
    }
  } else if (!HOST_KEY.test(hostKey)) {
    r.problem(
      `${path}.hostKey`,
      `for ${who} is not an OpenSSH public key line ("ssh-ed25519 AAAA..."); copy it from the host's /etc/ssh/ssh_host_*_key.pub without the comment.`,
    );
  }
  if (host === undefined || hostKey === undefined || !HOST_KEY.test(hostKey)) return undefined;
  return { host, port, user, hostKey };
}

function readLibvirt(r: ConfigReader, value: unknown): LibvirtSettings | undefined {
  const o = r.requiredObject(
    value,
    "libvirt",
    "describe the KVM host (ssh, network, subnet) whose libvirt network serves the nodes.",
  );
  if (!o) return undefined;
  const ssh = readSsh(r, o.ssh, "libvirt.ssh", undefined, "the libvirt host");
  const network = r.string(o.network, "libvirt.network") ?? "default";
  // The name reaches `virsh net-update <network>` as an argument: one starting with "-" would be
  // read as an option.
  if (!LIBVIRT_NETWORK.test(network)) {
    r.problem(
      "libvirt.network",
      `"${network}" is not a libvirt network name; use the name \`virsh net-list --all\` shows ` +
        `on the KVM host (letters, digits, "_", "." and "-", not starting with "." or "-").`,
    );
  }
  const subnet = readCidr(r, o.subnet, "libvirt.subnet", "192.168.122.0/24");
  const records: Record<string, string[]> = {};
  const rawRecords = r.object(o.dnsRecords, "libvirt.dnsRecords") ?? {};
  for (const [name, ips] of Object.entries(rawRecords)) {
    const path = `libvirt.dnsRecords["${name}"]`;
    if (!isHostname(name)) {
      r.problem(path, `"${name}" is not a valid DNS name; fix the record's hostname.`);
      continue;
    }
    const list = r.array(ips, path) ?? [];
    records[name.toLowerCase()] = list
      .map((ip, i) => readIp(r, ip, `${path}[${i}]`))
      .filter((ip): ip is string => ip !== undefined);
  }
  const dhcpDomain =
    o.dhcpDomain === undefined ? undefined : readHostname(r, o.dhcpDomain, "libvirt.dhcpDomain");
  if (!ssh || !subnet) return undefined;
  return { ssh, network, subnet: subnet.text, dnsRecords: records, dhcpDomain };
}

function readClusterSettings(
  r: ConfigReader,
  value: unknown,
  path: string,
  name: string,
  defaults: { clusterCidr: string; serviceCidr: string },
  versionRequired = true,
): ClusterSettings {
  const o = r.object(value, path) ?? {};
  const version = versionRequired
    ? r.requiredString(
        o.version,
        `${path}.version`,
        "set the RKE2 release to install, e.g. v1.35.6+rke2r1.",
      )
    : r.string(o.version, `${path}.version`);
  if (version !== undefined && !RKE2_VERSION.test(version)) {
    r.problem(
      `${path}.version`,
      `"${version}" is not an RKE2 release; write it as v<major>.<minor>.<patch>+rke2r<n>, e.g. v1.35.6+rke2r1.`,
    );
  }
  const clusterCidr = readCidr(r, o.clusterCidr, `${path}.clusterCidr`, defaults.clusterCidr);
  const serviceCidr = readCidr(r, o.serviceCidr, `${path}.serviceCidr`, defaults.serviceCidr);
  const tlsSan = (r.stringList(o.tlsSan, `${path}.tlsSan`) ?? []).filter((san, i) => {
    const ok = isIpv4(san) || isHostname(san);
    if (!ok)
      r.problem(`${path}.tlsSan[${i}]`, `"${san}" is neither an IPv4 address nor a DNS name.`);
    return ok;
  });
  const privateRegistry = r.string(o.privateRegistry, `${path}.privateRegistry`);
  if (privateRegistry !== undefined && !/^[A-Za-z0-9.-]+(:\d{1,5})?$/.test(privateRegistry)) {
    r.problem(
      `${path}.privateRegistry`,
      `"${privateRegistry}" must be host[:port], e.g. 192.168.122.156:30000.`,
    );
  }
  const snap = r.object(o.etcdSnapshot, `${path}.etcdSnapshot`) ?? {};
  const scheduleCron =
    r.string(snap.scheduleCron, `${path}.etcdSnapshot.scheduleCron`) ?? "0 */12 * * *";
  const fields = scheduleCron.split(/\s+/);
  if (fields.length !== 5 || !fields.every((f) => CRON_FIELD.test(f))) {
    r.problem(
      `${path}.etcdSnapshot.scheduleCron`,
      `"${scheduleCron}" is not a five-field cron schedule, e.g. "0 */6 * * *".`,
    );
  }
  const retention = r.integer(snap.retention, `${path}.etcdSnapshot.retention`, 5, 1, 1000);
  const nodePortRange = r.string(o.nodePortRange, `${path}.nodePortRange`) ?? "30000-32767";
  const ports = /^(\d{1,5})-(\d{1,5})$/.exec(nodePortRange);
  if (!ports || Number(ports[1]) >= Number(ports[2]) || Number(ports[2]) > 65535) {
    r.problem(
      `${path}.nodePortRange`,
      `"${nodePortRange}" must be "<low>-<high>" within 1-65535, e.g. 30000-32767.`,
    );
  }
  const clusterDomain = readHostname(
    r,
    o.clusterDomain ?? "cluster.local",
    `${path}.clusterDomain`,
  );
  const gate = r.object(o.joinGate, `${path}.joinGate`) ?? {};
  return {
    name,
    version: version ?? "",
    cni: r.oneOf(o.cni, `${path}.cni`, CNIS, "calico"),
    clusterCidr: clusterCidr?.text ?? defaults.clusterCidr,
    serviceCidr: serviceCidr?.text ?? defaults.serviceCidr,
    clusterDnsIp: nthAddress(serviceCidr ?? parseCidr(defaults.serviceCidr)!, 10),
    clusterDomain: clusterDomain ?? "cluster.local",
    kubeProxyMode: r.oneOf(o.kubeProxyMode, `${path}.kubeProxyMode`, PROXY_MODES, "iptables"),
    tlsSan,
    privateRegistry,
    etcdSnapshot: { scheduleCron, retention },
    nodePortRange,
    installCommand:
      r.string(o.installCommand, `${path}.installCommand`) ??
      "curl -sfL https://get.rke2.io | sh -",
    joinGate: {
      timeoutSeconds: r.integer(
        gate.timeoutSeconds,
        `${path}.joinGate.timeoutSeconds`,
        900,
        10,
        86400,
      ),
      pollSeconds: r.integer(gate.pollSeconds, `${path}.joinGate.pollSeconds`, 2, 1, 60),
    },
    serverJoin: r.oneOf(
      o.serverJoin,
      `${path}.serverJoin`,
      ["sequential", "parallel"] as const,
      "sequential",
    ),
    dnsDelivery: r.oneOf(
      o.dnsDelivery,
      `${path}.dnsDelivery`,
      ["serverManifest", "helmChartConfig"] as const,
      "serverManifest",
    ),
  };
}

function readRancher(r: ConfigReader, value: unknown): RancherSettings | undefined {
  const o = r.object(value, "rancher");
  if (!o) return undefined;
  const url = r.requiredString(
    o.url,
    "rancher.url",
    "set Rancher's server URL, e.g. https://ai-ear.cn.",
  );
  let hostname: string | undefined;
  if (url !== undefined) {
    const m = /^https:\/\/([^/:]+)(:\d+)?\/?$/.exec(url);
    if (!m || !isHostname(m[1])) {
      r.problem(
        "rancher.url",
        `"${url}" must be https://<hostname>[:port]; Rancher agents only trust HTTPS.`,
      );
    } else {
      hostname = m[1].toLowerCase();
    }
  }
  const caCertificate = r.string(o.caCertificate, "rancher.caCertificate");
  if (caCertificate !== undefined && !caCertificate.includes("-----BEGIN CERTIFICATE-----")) {
    r.problem("rancher.caCertificate", "must be a PEM certificate (-----BEGIN CERTIFICATE-----).");
  }
  const list = r.array(o.downstreamClusters, "rancher.downstreamClusters") ?? [];
  const downstreamClusters: DownstreamClusterSpec[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const path = `rancher.downstreamClusters[${i}]`;
    const c = r.object(item, path) ?? {};
    const name = r.requiredString(c.name, `${path}.name`, "name the cluster as Rancher shows it.");
    if (name === undefined) return;
    if (!K8S_NAME.test(name) || name === MANAGEMENT_CLUSTER) {
      r.problem(
        `${path}.name`,
        `"${name}" must be a lowercase DNS label other than "${MANAGEMENT_CLUSTER}".`,
      );
    }
    if (seen.has(name))
      r.problem(`${path}.name`, `"${name}" is declared twice; cluster names must be unique.`);
    seen.add(name);
    const settings = readClusterSettings(r, c, path, name, {
      clusterCidr: "10.42.0.0/16",
      serviceCidr: "10.43.0.0/16",
    });
    downstreamClusters.push({
      ...settings,
      insecureRegistration: r.boolean(
        c.insecureRegistration,
        `${path}.insecureRegistration`,
        false,
      ),
    });
  });
  if (url === undefined || hostname === undefined) return undefined;
  return { url, hostname, caCertificate, downstreamClusters };
}

function readNodes(r: ConfigReader, value: unknown, clusters: ClusterSettings[]): NodeSpec[] {
  const list = r.array(value, "nodes");
  if (!list || list.length === 0) {
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
    const name = readHostname(r, o.name, `${path}.name`);
    if (o.name === undefined) r.problem(`${path}.name`, "is missing; set the node's hostname.");
    const ip = readIp(r, o.ip, `${path}.ip`);
    if (o.ip === undefined) r.problem(`${path}.ip`, "is missing; set the node's address.");
    if (name !== undefined) {
      if (names.has(name)) {
        r.problem(
          `${path}.name`,
          `"${name}" is also nodes[${names.get(name)}]; node names must be unique.`,
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
    const cluster = r.string(o.cluster, `${path}.cluster`) ?? MANAGEMENT_CLUSTER;
    if (!clusterNames.includes(cluster)) {
      r.problem(
        `${path}.cluster`,
        `"${cluster}" is not a known cluster; use "${MANAGEMENT_CLUSTER}" or a name from rancher.downstreamClusters.`,
      );
    }
    const roles = readRoles(r, o, path, cluster);
    // An invalid ip is reported above; do not also report the SSH host it would have given.
    const sshDefault = ip ?? (o.ip === undefined ? undefined : "");
    const ssh = readSsh(r, o.ssh, `${path}.ssh`, sshDefault, `node ${name ?? path}`);
    if (name && ip && ssh && roles) nodes.push({ name, ip, cluster, roles, ssh });
  });
  return nodes;
}

function readRoles(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  cluster: string,
): NodeRole[] | undefined {
  const rawRoles = o.roles ?? (o.role === undefined ? undefined : [o.role]);
  const rolesPath = o.roles !== undefined ? `${path}.roles` : `${path}.role`;
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
      r.problem(
        rolesPath,
        `nodes of the management cluster are either "server" or "agent", found ${roles.join(", ")}.`,
      );
      return undefined;
    }
  } else if (roles.some((role) => !(DOWNSTREAM_ROLES as readonly string[]).includes(role))) {
    r.problem(
      rolesPath,
      `nodes of downstream cluster "${cluster}" take roles from ${DOWNSTREAM_ROLES.join(", ")}.`,
    );
    return undefined;
  }
  return roles;
}

function readDns(r: ConfigReader, value: unknown): DnsSettings {
  const o = r.object(value, "dns") ?? {};
  const staticHosts: Record<string, string[]> = {};
  for (const [name, ips] of Object.entries(r.object(o.staticHosts, "dns.staticHosts") ?? {})) {
    const path = `dns.staticHosts["${name}"]`;
    if (!isHostname(name)) {
      r.problem(path, `"${name}" is not a valid DNS name; fix the hostname.`);
      continue;
    }
    staticHosts[name.toLowerCase()] = (r.array(ips, path) ?? [])
      .map((ip, i) => readIp(r, ip, `${path}[${i}]`))
      .filter((ip): ip is string => ip !== undefined);
  }
  const neutralizedSearchDomains = (
    r.stringList(o.neutralizedSearchDomains, "dns.neutralizedSearchDomains") ?? []
  )
    .map((d, i) => readHostname(r, d, `dns.neutralizedSearchDomains[${i}]`))
    .filter((d): d is string => d !== undefined);
  const nl = r.object(o.nodeLocal, "dns.nodeLocal") ?? {};
  const nodeLocal = {
    enabled: r.boolean(nl.enabled, "dns.nodeLocal.enabled", false),
    ip: readIp(r, nl.ip ?? "169.254.20.10", "dns.nodeLocal.ip") ?? "169.254.20.10",
  };
  const upstreamList = r.array(o.upstreamResolvers, "dns.upstreamResolvers");
  if (!upstreamList || upstreamList.length === 0) {
    r.problem(
      "dns.upstreamResolvers",
      "lists no resolver; give the addresses the cluster DNS forwards to (at least two).",
    );
  }
  const upstreamResolvers = (upstreamList ?? [])
    .map((ip, i) => readIp(r, ip, `dns.upstreamResolvers[${i}]`))
    .filter((ip): ip is string => ip !== undefined);
  const policyNamespaces = (r.stringList(o.policyNamespaces, "dns.policyNamespaces") ?? []).filter(
    (ns, i) => {
      const ok = K8S_NAME.test(ns);
      if (!ok)
        r.problem(`dns.policyNamespaces[${i}]`, `"${ns}" is not a Kubernetes namespace name.`);
      return ok;
    },
  );
  return { staticHosts, neutralizedSearchDomains, nodeLocal, upstreamResolvers, policyNamespaces };
}

function readNodePreparation(r: ConfigReader, value: unknown): NodePreparationSettings {
  const o = r.object(value, "nodePreparation") ?? {};
  const devices = r.stringList(o.unmanagedDevices, "nodePreparation.unmanagedDevices");
  (devices ?? []).forEach((d, i) => {
    if (!/^[A-Za-z0-9._*-]{1,15}$/.test(d)) {
      r.problem(
        `nodePreparation.unmanagedDevices[${i}]`,
        `"${d}" is not an interface name pattern.`,
      );
    }
  });
  if (devices && !devices.includes("kube-ipvs0")) {
    r.problem(
      "nodePreparation.unmanagedDevices",
      "must include kube-ipvs0; NetworkManager managing it is what took ClusterIPs down in seed 003.",
    );
  }
  return {
    unmanagedDevices: devices ?? DEFAULT_UNMANAGED_DEVICES,
    bringUpKubeIpvs: r.boolean(o.bringUpKubeIpvs, "nodePreparation.bringUpKubeIpvs", false),
  };
}

function readDeploy(r: ConfigReader, value: unknown): DeploySelection {
  const o = r.object(value, "deploy") ?? {};
  const known = [
    "libvirtDnsRecords",
    "nodePreparation",
    "rke2Servers",
    "clusterDns",
    "rancherClusters",
  ];
  for (const key of Object.keys(o)) {
    if (!known.includes(key))
      r.problem(`deploy.${key}`, `is not a part of the estate; use one of ${known.join(", ")}.`);
  }
  return {
    libvirtDnsRecords: r.boolean(o.libvirtDnsRecords, "deploy.libvirtDnsRecords", true),
    nodePreparation: r.boolean(o.nodePreparation, "deploy.nodePreparation", true),
    rke2Servers: r.boolean(o.rke2Servers, "deploy.rke2Servers", true),
    clusterDns: r.boolean(o.clusterDns, "deploy.clusterDns", true),
    rancherClusters: r.boolean(o.rancherClusters, "deploy.rancherClusters", true),
  };
}

function checkNetworks(
  r: ConfigReader,
  libvirt: LibvirtSettings | undefined,
  clusters: ClusterSettings[],
): void {
  const nodeNet = libvirt ? parseCidr(libvirt.subnet) : undefined;
  clusters.forEach((c, i) => {
    const path = c.name === MANAGEMENT_CLUSTER ? "rke2" : `rancher.downstreamClusters[${i - 1}]`;
    const nets: [string, Cidr | undefined][] = [
      [`${path}.clusterCidr`, parseCidr(c.clusterCidr)],
      [`${path}.serviceCidr`, parseCidr(c.serviceCidr)],
      ["libvirt.subnet", nodeNet],
    ];
    for (let a = 0; a < nets.length; a++) {
      for (let b = a + 1; b < nets.length; b++) {
        const [keyA, netA] = nets[a];
        const [keyB, netB] = nets[b];
        if (netA && netB && cidrsOverlap(netA, netB)) {
          r.problem(
            keyA,
            `${netA.text} overlaps ${netB.text} (${r.key(keyB)}); pod, service and node networks must be disjoint or traffic is routed to the wrong place.`,
          );
        }
      }
    }
  });
}

function checkServers(
  r: ConfigReader,
  nodes: NodeSpec[],
  management: ClusterSettings,
  allNodesRead: boolean,
): void {
  // Counting is only meaningful when every entry was read; a broken entry is reported on its own.
  if (!allNodesRead) return;
  const servers = nodes.filter(
    (n) => n.cluster === MANAGEMENT_CLUSTER && n.roles.includes("server"),
  );
  if (servers.length === 0 && nodes.some((n) => n.cluster === MANAGEMENT_CLUSTER)) {
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
  for (const server of servers) {
    if (!management.tlsSan.includes(server.ip)) {
      r.problem(
        "rke2.tlsSan",
        `does not list server ${server.name} (${server.ip}); add it or clients and joining servers addressing it cannot verify the API certificate.`,
      );
    }
  }
}

function checkDownstreamMembership(
  r: ConfigReader,
  nodes: NodeSpec[],
  rancher: RancherSettings | undefined,
): void {
  rancher?.downstreamClusters.forEach((c, i) => {
    const members = nodes.filter((n) => n.cluster === c.name);
    for (const role of ["etcd", "controlplane"] as const) {
      if (!members.some((n) => n.roles.includes(role))) {
        r.problem(
          `rancher.downstreamClusters[${i}]`,
          `cluster "${c.name}" has no node with role ${role}; add one under nodes with cluster: ${c.name}.`,
        );
      }
    }
    const initialises = members.some(
      (n) => n.roles.includes("etcd") && n.roles.includes("controlplane"),
    );
    const hasBoth = ["etcd", "controlplane"].every((role) =>
      members.some((n) => n.roles.includes(role as NodeSpec["roles"][number])),
    );
    if (hasBoth && !initialises) {
      r.problem(
        `rancher.downstreamClusters[${i}]`,
        `cluster "${c.name}" has no node with both roles etcd and controlplane; the first registered node initialises the control plane and needs both (seed 000: later nodes get no plan until it is in).`,
      );
    }
    if (!c.insecureRegistration && rancher.caCertificate === undefined) {
      r.problem(
        "rancher.caCertificate",
        `is not set; cluster "${c.name}" registers its nodes with Rancher's CA pinned by --ca-checksum. Set it to the CA exactly as Rancher serves it (curl -fsk https://<rancher>/cacerts), or opt in to rancher.downstreamClusters[${i}].insecureRegistration.`,
      );
    }
  });
}

function checkDnsAgainstNetworks(
  r: ConfigReader,
  dns: DnsSettings,
  libvirt: LibvirtSettings | undefined,
  clusters: ClusterSettings[],
  nodes: NodeSpec[],
): void {
  const inUse: [string, Cidr][] = [];
  if (libvirt) inUse.push(["libvirt.subnet", parseCidr(libvirt.subnet)!]);
  for (const c of clusters) {
    const cc = parseCidr(c.clusterCidr);
    const sc = parseCidr(c.serviceCidr);
    if (cc) inUse.push([`cluster CIDR of ${c.name}`, cc]);
    if (sc) inUse.push([`service CIDR of ${c.name}`, sc]);
  }
  for (const [what, net] of inUse) {
    if (cidrContains(net, dns.nodeLocal.ip)) {
      r.problem(
        "dns.nodeLocal.ip",
        `${dns.nodeLocal.ip} lies inside ${net.text} (${what}); pick a link-local address such as 169.254.20.10.`,
      );
    }
  }
  if (nodes.some((n) => n.ip === dns.nodeLocal.ip)) {
    r.problem(
      "dns.nodeLocal.ip",
      `${dns.nodeLocal.ip} is a node address; pick a link-local address such as 169.254.20.10.`,
    );
  }
  dns.neutralizedSearchDomains.forEach((domain, i) => {
    // A domain at or under the cluster domain is a longer zone than it: CoreDNS would route
    // service names there and answer NXDOMAIN for them.
    const cluster = clusters.find(
      (c) => c.clusterDomain === domain || domain.endsWith(`.${c.clusterDomain}`),
    );
    if (cluster) {
      r.problem(
        `dns.neutralizedSearchDomains[${i}]`,
        `"${domain}" lies within the cluster domain ${cluster.clusterDomain} of ${cluster.name}; neutralising it would answer NXDOMAIN for services.`,
      );
    }
  });
  dns.upstreamResolvers.forEach((ip, i) => {
    const path = `dns.upstreamResolvers[${i}]`;
    const loopTarget = clusters.find((c) => c.clusterDnsIp === ip);
    if (loopTarget) {
      r.problem(
        path,
        `${ip} is the cluster DNS of ${loopTarget.name}; forwarding to it is a loop (seed 004). Use the nodes' real resolvers.`,
      );
    } else if (dns.nodeLocal.enabled && ip === dns.nodeLocal.ip) {
      r.problem(
        path,
        `${ip} is the NodeLocalDNS address; forwarding to it is a loop (seed 004). Use the nodes' real resolvers.`,
      );
    } else if (ip.startsWith("127.")) {
      r.problem(
        path,
        `${ip} is a loopback address; inside a pod it is the cache itself, a loop (seed 004).`,
      );
    }
  });
}

function checkSecrets(
  r: ConfigReader,
  raw: RawStackConfig,
  options: ValidationOptions,
  nodes: NodeSpec[],
  rancher: RancherSettings | undefined,
  management: ClusterSettings,
): void {
  const needed = new Set<string>(["sshPrivateKey"]);
  if (nodes.some((n) => n.roles.includes("server"))) needed.add("rke2Token");
  if (rancher && rancher.downstreamClusters.length > 0) needed.add("rancherToken");
  if (management.dnsDelivery === "helmChartConfig") needed.add("kubeconfig");
  for (const key of SECRET_KEYS) {
    const present = raw.values[key] !== undefined || raw.secretKeys.has(key);
    if (present && !raw.secretKeys.has(key)) {
      r.problem(
        key,
        `is stored in plain text; remove it and set it with \`pulumi config set --secret ${key}\`.`,
      );
    } else if (!present && options.requireSecrets && needed.has(key)) {
      r.problem(
        key,
        `is not set; set it with \`pulumi config set --secret ${key}\` (read from a file with --path or stdin).`,
      );
    }
  }
}
