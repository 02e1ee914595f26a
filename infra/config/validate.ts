import { clusterPortRules } from "../../components/node-preparation/ports";
import {
  ClusterSettings,
  DeploySelection,
  DnsPolicyNamespace,
  DnsSettings,
  DownstreamClusterSpec,
  DownstreamRole,
  EnvironmentModel,
  LibvirtSettings,
  MANAGEMENT_CLUSTER,
  NodePreparationSettings,
  NodeRole,
  NodeSpec,
  RancherSettings,
  Rke2PassThrough,
  SECRET_KEYS,
  SshEndpoint,
  Cidr,
  cidrContains,
  cidrSize,
  cidrsOverlap,
  ipToNumber,
  isIpv4,
  numberToIp,
  nthAddress,
  networkOfPrefix,
  parseCidr,
  inZone,
} from "../../components/model";
import { ConfigProblem, ConfigValidationError } from "./problems";
import { DeployPart, keyIsRead, unusedKeys } from "./deploy-parts";
import { closest, ConfigReader, editDistance } from "./reader";
import { readArtifacts } from "./artifacts";
import { endpointsWithoutScheme, readRegistries } from "./registries";
import {
  knownProfile,
  profileSettingOf,
  protectKernelDefaultsOff,
  RKE2_PROFILES,
} from "../../components/node-preparation/profile";
import { hostKeyProblem } from "./host-key";
import {
  CLUSTER_KEYS,
  DEPLOY_KEYS,
  DNS_KEYS,
  DOWNSTREAM_CLUSTER_KEYS,
  DOWNSTREAM_ROLES,
  ETCD_SNAPSHOT_KEYS,
  isListSchema,
  isSetting,
  JOIN_GATE_KEYS,
  DRAIN_KEYS,
  KeySchema,
  LIBVIRT_KEYS,
  MANAGEMENT_ONLY_KEYS,
  NODE_KEYS,
  NODE_LOCAL_KEYS,
  NODE_PREPARATION_KEYS,
  NODE_ROLES,
  POLICY_NAMESPACE_KEYS,
  readSettings,
  SSH_KEYS,
  STACK_CONFIG_KEYS,
} from "./stack-keys";
import {
  MANAGEMENT_STACK_KEY,
  ManagementStackOutputs,
  readManagementStack,
  withManagementOutputs,
} from "./management-stack";
import {
  knownMinorLines,
  minorLineOf,
  newestReleaseOn,
  RELEASE_TABLE_MODULE,
} from "../../components/cluster-dns/chart-releases";
import { releaseDnsProblem } from "../../components/cluster-dns/values";
import { systemNamespaceOwner } from "../../components/cluster-dns/egress-isolation";
import { missingRoles, registrationPlan } from "../../components/rancher-cluster/registration";
import { unmanagedDevicesProblems } from "../../components/node-preparation/render";
import {
  ARG_LIST_FLAGS_MANAGED,
  argFlag,
  isArgList,
  MANAGED_RKE2_KEYS,
} from "../../components/rke2-cluster/config";

export const CONFIG_NAMESPACE = "rke2-remediation";

export interface RawStackConfig {
  /** Config values by key without the namespace; secret values are not needed here. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Keys (without namespace) whose values are stored as Pulumi secrets. */
  readonly secretKeys: ReadonlySet<string>;
  /** Full keys ("ns:key") of the stack's other namespaces, checked for a misspelt namespace. */
  readonly otherNamespaceKeys?: readonly string[];
}

export interface ValidationOptions {
  /** Deployments need every secret; offline render and verify run without them. */
  readonly requireSecrets: boolean;
  /**
   * The `rancher` output of the stack `managementStack` names, read by the caller (a
   * StackReference in the program, a file offline); absent, a stack that names one is refused.
   */
  readonly managementOutputs?: ManagementStackOutputs;
}

const HOSTNAME =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;
const K8S_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const RKE2_VERSION = /^v1\.\d+\.\d+\+rke2r\d+$/;
const HOST_KEY =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521) [A-Za-z0-9+/]+={0,3}$/;
const LIBVIRT_NETWORK = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const CRON_FIELD = /^[\d*/,-]+$/;
// The model's unions and the declaration's words are the same lists.
const ALL_ROLES: readonly NodeRole[] = NODE_ROLES;
const DOWNSTREAM: readonly DownstreamRole[] = DOWNSTREAM_ROLES;

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
  checkNamespaces(r, raw);
  checkKnownKeys(r, raw);
  // A downstream stack's Rancher values come from the stack that owns Rancher.
  const managementStack = readManagementStack(r, raw.values[MANAGEMENT_STACK_KEY]);
  if (managementStack !== undefined && options.managementOutputs === undefined) {
    r.problem(
      MANAGEMENT_STACK_KEY,
      `names the stack "${managementStack}", whose outputs are not at hand: render and verify ` +
        "run offline, so pass them with --management-outputs <file>, written by " +
        `\`pulumi stack output --stack ${managementStack} --json > <file>\`.`,
    );
  }
  if (options.managementOutputs !== undefined && raw.values[MANAGEMENT_STACK_KEY] === undefined) {
    r.problem(
      MANAGEMENT_STACK_KEY,
      "is not set, yet a management stack's outputs were given (--management-outputs); set it " +
        "to that stack's name, or leave the outputs out.",
    );
  }
  const merged: RawStackConfig =
    managementStack !== undefined && options.managementOutputs !== undefined
      ? {
          ...raw,
          values: withManagementOutputs(r, raw.values, managementStack, options.managementOutputs),
        }
      : raw;
  const v = merged.values;

  // What the stack deploys decides which keys it must give (deploy-parts.ts).
  const deploy = readDeploy(r, v.deploy);
  const reads = (key: string) => keyIsRead(deploy, key);
  const libvirt = readLibvirt(r, v.libvirt, reads("libvirt.ssh"));
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
    listsManagementNodes && reads("rke2.version"),
  );
  // Without the management stack's outputs, its URL is not at hand: that is reported above, and
  // the clusters this stack declares are still read.
  const outputsNotAtHand = managementStack !== undefined && options.managementOutputs === undefined;
  const rancher = readRancher(r, v.rancher, deploy, outputsNotAtHand);
  const clusters: ClusterSettings[] = [management, ...(rancher?.downstreamClusters ?? [])];
  const nodes = readNodes(r, v.nodes, clusters, deploy);
  const dns = readDns(r, v.dns, reads("dns.upstreamResolvers"));
  const nodePreparation = readNodePreparation(r, v.nodePreparation);

  checkNetworks(r, libvirt, clusters);
  checkServers(r, nodes, Array.isArray(v.nodes) && nodes.length === v.nodes.length, deploy);
  checkRegistrationAddress(r, management, nodes);
  checkProfiles(r, clusters, nodes);
  // Rancher registers the nodes: only then must each cluster have every role and a CA to pin.
  if (deploy.rancherClusters) checkDownstreamMembership(r, nodes, rancher, outputsNotAtHand);
  checkDnsAgainstNetworks(r, dns, libvirt, clusters, nodes);
  checkDnsAgainstReleases(r, dns, clusters);
  const rancherAnswer = checkRancherStaticHosts(
    r,
    dns,
    libvirt,
    rancher,
    nodes,
    Array.isArray(v.nodes) && nodes.length === v.nodes.length,
  );
  checkSecrets(r, merged, options, { deploy, nodes, rancher, management });
  checkEstateMistakes(r, { raw: merged, libvirt, clusters, nodes, dns, rancher });
  checkNeutralizedDomainsSpareRancher(r, dns, rancher);

  if (r.problems.length > 0 || !libvirt) return { problems: r.problems };
  const dnsWithRancher = rancherAnswer
    ? { ...dns, staticHosts: { ...dns.staticHosts, ...rancherAnswer } }
    : dns;
  return {
    model: {
      stack,
      ...(managementStack !== undefined ? { managementStack } : {}),
      deploy,
      libvirt,
      nodes,
      management,
      rancher,
      dns: dnsWithRancher,
      nodePreparation,
    },
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

/** A list item or other value no declaration reads: a string, then an IPv4 address. */
function readIp(r: ConfigReader, value: unknown, path: string): string | undefined {
  return ipOf(r, r.string(value, path), path);
}

/** `text`, read through the declaration, as an IPv4 address. */
function ipOf(r: ConfigReader, s: string | undefined, path: string): string | undefined {
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

/** `text`, read through the declaration, as a network in CIDR form. */
function cidrOf(r: ConfigReader, text: string | undefined, path: string): Cidr | undefined {
  if (text === undefined) return undefined;
  const cidr = parseCidr(text);
  if (!cidr) {
    // Host bits set (10.100.5.0/16): name the network the prefix gives.
    const network = networkOfPrefix(text);
    r.problem(
      path,
      `"${text}" is not a network in CIDR form; ` +
        (network
          ? `its address has host bits set for /${network.split("/")[1]}: write the network address, ${network}, or a longer prefix.`
          : "write the network address and prefix, e.g. 10.42.0.0/16."),
    );
  }
  return cidr;
}

/** `s`, read through the declaration, as a DNS name, lowercased. */
function hostnameOf(r: ConfigReader, s: string | undefined, path: string): string | undefined {
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

/**
 * An SSH endpoint. Not `required` (no part of the stack's selection connects there), a missing
 * host or host key is no problem and gives no endpoint; values given are still checked.
 */
function readSsh(
  r: ConfigReader,
  value: unknown,
  path: string,
  defaultHost: string | undefined,
  who: string,
  required = true,
): SshEndpoint | undefined {
  const o = r.object(value, path) ?? {};
  const { port, user, hostKey, ...given } = readSettings(r, SSH_KEYS, o, path);
  const host = o.host === undefined ? defaultHost : given.host;
  if (host === undefined && required) {
    r.problem(`${path}.host`, `is missing; set the SSH address of ${who}.`);
  }
  if (host === "") return undefined;
  if (hostKey === undefined) {
    if (o.hostKey === undefined && required) {
      r.problem(
        `${path}.hostKey`,
        `${who} has no pinned host key; SSH refuses unverified hosts. Read the key on the host ` +
          `(cat /etc/ssh/ssh_host_ed25519_key.pub) and set the whole line here.`,
      );
    }
  } else if (!HOST_KEY.test(hostKey) && secretShapeOf(hostKey) === undefined) {
    // A private key pasted here is reported by checkPlainSecrets, without echoing it.
    r.problem(
      `${path}.hostKey`,
      `for ${who} is not an OpenSSH public key line ("ssh-ed25519 AAAA..."); copy it from the host's /etc/ssh/ssh_host_*_key.pub without the comment.`,
    );
  }
  const inside =
    hostKey !== undefined && HOST_KEY.test(hostKey) ? hostKeyProblem(hostKey) : undefined;
  if (inside) {
    r.problem(
      `${path}.hostKey`,
      `for ${who} is not a valid key: ${inside}. Copy the line again from the host's /etc/ssh/ssh_host_*_key.pub.`,
    );
  }
  if (host === undefined || hostKey === undefined || !HOST_KEY.test(hostKey) || inside)
    return undefined;
  return { host, port, user, hostKey };
}

/**
 * `libvirt`: the node network, and the KVM host whose network's records the stack manages. The
 * host (`libvirt.ssh`) is required only while the stack manages those records; without it the
 * section may be left out, and the node network is libvirt's default.
 */
function readLibvirt(
  r: ConfigReader,
  value: unknown,
  hostRequired: boolean,
): LibvirtSettings | undefined {
  const o = hostRequired
    ? r.requiredObject(
        value,
        "libvirt",
        "describe the KVM host (ssh, network, subnet) whose libvirt network serves the nodes.",
      )
    : (r.object(value, "libvirt") ?? {});
  if (!o) return undefined;
  const ssh =
    o.ssh === undefined && !hostRequired
      ? undefined
      : readSsh(r, o.ssh, "libvirt.ssh", undefined, "the libvirt host", hostRequired);
  const v = readSettings(r, LIBVIRT_KEYS, o, "libvirt");
  const network = v.network;
  // The name reaches `virsh net-update <network>` as an argument: one starting with "-" would be
  // read as an option.
  if (!LIBVIRT_NETWORK.test(network)) {
    r.problem(
      "libvirt.network",
      `"${network}" is not a libvirt network name; use the name \`virsh net-list --all\` shows ` +
        `on the KVM host (letters, digits, "_", "." and "-", not starting with "." or "-").`,
    );
  }
  const subnet = cidrOf(r, v.subnet, "libvirt.subnet");
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
  const dhcpDomain = hostnameOf(r, v.dhcpDomain, "libvirt.dhcpDomain");
  const gateway = libvirtGateway(r, v.gateway, subnet);
  if ((hostRequired && !ssh) || !subnet) return undefined;
  return {
    ...(ssh ? { ssh } : {}),
    network,
    subnet: subnet.text,
    ...(gateway ? { gateway } : {}),
    dnsRecords: records,
    dhcpDomain,
    removeStaleRecords: v.removeStaleRecords,
  };
}

/**
 * A cluster's settings, the management cluster's (`rke2`) or a downstream one's. A downstream
 * cluster takes the management-only settings' defaults; checkKnownKeys reports one it gives.
 */
function readClusterSettings(
  r: ConfigReader,
  value: unknown,
  path: string,
  name: string,
  versionRequired = true,
): ClusterSettings {
  const o = r.object(value, path) ?? {};
  // A required version written empty is missing, as one left out.
  const missingVersion = versionRequired && (o.version === undefined || o.version === "");
  const v = readSettings(r, CLUSTER_KEYS, missingVersion ? { ...o, version: undefined } : o, path);
  const management = readSettings(
    r,
    MANAGEMENT_ONLY_KEYS,
    name === MANAGEMENT_CLUSTER ? o : {},
    path,
  );
  if (missingVersion) {
    r.problem(
      `${path}.version`,
      "is missing; set the RKE2 release to install, e.g. v1.35.7+rke2r1.",
    );
  }
  const version = v.version;
  if (version !== undefined && !RKE2_VERSION.test(version)) {
    r.problem(
      `${path}.version`,
      `"${version}" is not an RKE2 release; write it as v<major>.<minor>.<patch>+rke2r<n>, e.g. v1.35.7+rke2r1.`,
    );
  }
  const clusterCidr = cidrOf(r, v.clusterCidr, `${path}.clusterCidr`);
  const serviceCidr = cidrOf(r, v.serviceCidr, `${path}.serviceCidr`);
  const tlsSan = (v.tlsSan ?? []).filter((san, i) => {
    const ok = isIpv4(san) || isHostname(san);
    if (!ok)
      r.problem(`${path}.tlsSan[${i}]`, `"${san}" is neither an IPv4 address nor a DNS name.`);
    return ok;
  });
  // Downstream clusters do not take it: the unknown-key check reports it there.
  const registrationAddress = registrationAddressOf(r, management.registrationAddress, path);
  const privateRegistry = v.privateRegistry;
  if (privateRegistry?.includes("@")) {
    // Never echoed: what stands before "@" is a user name and likely a password.
    // rancher/rke2-docs@9477b7b1df1f:docs/install/airgap.md: system-default-registry is a host
    // and optional port; docs/install/private_registry.md: credentials go in registries.yaml.
    r.problem(
      `${path}.privateRegistry`,
      "carries credentials before the host (user:password@...), in clear text in the stack file and Pulumi's state; RKE2's system-default-registry takes host[:port] only, and registry credentials belong in the nodes' /etc/rancher/rke2/registries.yaml. Write host[:port] and replace that password.",
    );
  } else if (
    privateRegistry !== undefined &&
    !/^[A-Za-z0-9.-]+(:\d{1,5})?$/.test(privateRegistry)
  ) {
    r.problem(
      `${path}.privateRegistry`,
      `"${privateRegistry}" must be host[:port], e.g. 192.168.122.156:30000.`,
    );
  }
  const registries =
    name === MANAGEMENT_CLUSTER ? readRegistries(r, o.registries, `${path}.registries`) : undefined;
  const artifacts =
    name === MANAGEMENT_CLUSTER
      ? readArtifacts(r, o.artifacts, `${path}.artifacts`, o.installCommand !== undefined)
      : undefined;
  const etcdSnapshot = readSettings(
    r,
    ETCD_SNAPSHOT_KEYS,
    r.object(o.etcdSnapshot, `${path}.etcdSnapshot`) ?? {},
    `${path}.etcdSnapshot`,
  );
  checkCronSchedule(r, `${path}.etcdSnapshot.scheduleCron`, etcdSnapshot.scheduleCron);
  const nodePortRange = v.nodePortRange;
  const ports = /^(\d{1,5})-(\d{1,5})$/.exec(nodePortRange);
  if (!ports || Number(ports[1]) >= Number(ports[2]) || Number(ports[2]) > 65535) {
    r.problem(
      `${path}.nodePortRange`,
      `"${nodePortRange}" must be "<low>-<high>" within 1-65535, e.g. 30000-32767.`,
    );
  }
  const clusterDomain = hostnameOf(r, v.clusterDomain, `${path}.clusterDomain`);
  const joinGate = readSettings(
    r,
    JOIN_GATE_KEYS,
    r.object(o.joinGate, `${path}.joinGate`) ?? {},
    `${path}.joinGate`,
  );
  // Downstream clusters do not take it: the unknown-key check reports it there.
  const drain = readSettings(
    r,
    DRAIN_KEYS,
    name === MANAGEMENT_CLUSTER ? (r.object(o.drain, `${path}.drain`) ?? {}) : {},
    `${path}.drain`,
  );
  const passThrough = (key: "extraConfig" | "serverConfig" | "agentConfig") => {
    const settings = readPassThrough(r, o[key], `${path}.${key}`);
    return settings === undefined ? {} : { [key]: settings };
  };
  return {
    ...passThrough("extraConfig"),
    ...passThrough("serverConfig"),
    ...passThrough("agentConfig"),
    name,
    version: version ?? "",
    cni: v.cni,
    // A network given but malformed is reported above; the model keeps the default.
    clusterCidr: clusterCidr?.text ?? CLUSTER_KEYS.clusterCidr.fallback,
    serviceCidr: serviceCidr?.text ?? CLUSTER_KEYS.serviceCidr.fallback,
    clusterDnsIp: nthAddress(serviceCidr ?? parseCidr(CLUSTER_KEYS.serviceCidr.fallback)!, 10),
    clusterDomain: clusterDomain ?? CLUSTER_KEYS.clusterDomain.fallback,
    kubeProxyMode: v.kubeProxyMode,
    tlsSan,
    registrationAddress,
    privateRegistry,
    etcdSnapshot,
    nodePortRange,
    installCommand: management.installCommand,
    ...(artifacts ? { artifacts } : {}),
    ...(registries ? { registries } : {}),
    joinGate,
    serverJoin: management.serverJoin,
    drain,
    agentsMaxUnavailable: management.agentsMaxUnavailable,
    dnsDelivery: management.dnsDelivery,
  };
}

/**
 * A node whose pass-through settings give `profile: cis` and `protect-kernel-defaults: false`:
 * RKE2 exits at start (rancher/rke2@v1.35.7+rke2r1:pkg/cli/cmds/profile_linux.go setCISFlags).
 */
function checkProfiles(
  r: ConfigReader,
  clusters: readonly ClusterSettings[],
  nodes: readonly NodeSpec[],
): void {
  nodes.forEach((node, i) => {
    const cluster = clusters.find((c) => c.name === node.cluster);
    if (!cluster || knownProfile(profileSettingOf(cluster, node)) !== "cis") return;
    if (protectKernelDefaultsOff(cluster, node))
      r.problem(
        `nodes[${i}]`,
        `${node.name} gets profile: cis and protect-kernel-defaults: false from its pass-through ` +
          "settings; RKE2 exits at start (--protect-kernel-defaults must be true when using " +
          "--profile=cis). Remove protect-kernel-defaults: the profile sets it.",
      );
  });
}

/** `<path>.registrationAddress`, read through the declaration: an IPv4 address or a DNS name. */
function registrationAddressOf(
  r: ConfigReader,
  s: string | undefined,
  path: string,
): string | undefined {
  if (s === undefined) return undefined;
  const key = `${path}.registrationAddress`;
  // A name whose last label is all digits is a mistyped address, not a DNS name.
  const dnsName = isHostname(s) && !/(^|\.)\d+$/.test(s);
  if (!isIpv4(s) && !dnsName) {
    r.problem(
      key,
      `"${s}" is neither an IPv4 address nor a DNS name; set the VIP or DNS name in front of the servers, e.g. 192.168.122.100 or rke2.example.com.`,
    );
    return undefined;
  }
  return s.toLowerCase();
}

/**
 * `rancher`. The URL is required only where the stack registers clusters with Rancher
 * (`deploy.rancherClusters`) and it is not the management stack's, whose outputs are not at hand
 * (`urlNotAtHand`, reported on its own); without it, nothing in the estate answers or protects
 * Rancher's host by name. A downstream cluster's release is required where its DNS fix is computed.
 */
function readRancher(
  r: ConfigReader,
  value: unknown,
  deploy: DeploySelection,
  urlNotAtHand = false,
): RancherSettings | undefined {
  const o = r.object(value, "rancher");
  if (!o) return undefined;
  const url =
    deploy.rancherClusters && !urlNotAtHand
      ? r.requiredString(o.url, "rancher.url", "set Rancher's server URL, e.g. https://ai-ear.cn.")
      : r.string(o.url, "rancher.url");
  let hostname: string | undefined;
  if (url !== undefined) {
    const m = /^https:\/\/([^/:]+)(:\d+)?\/?$/.exec(url);
    if (/:\/\/[^/]*@/.test(url)) {
      // Never echoed: the part before "@" is a user name and likely a password. One that
      // holds a password is reported by checkPlainSecrets.
      if (secretShapeOf(url) === undefined)
        r.problem(
          "rancher.url",
          "carries credentials before the host (https://user:password@...), which would be written in clear text to the stack file and to Pulumi's state; write only https://<hostname>[:port] and replace that password.",
        );
    } else if (!m || !isHostname(m[1])) {
      r.problem(
        "rancher.url",
        `"${url}" must be https://<hostname>[:port]; Rancher agents only trust HTTPS.`,
      );
    } else {
      hostname = m[1].toLowerCase();
    }
  }
  // Kept as the stack gives it: Rancher's --ca-checksum hashes the cacerts setting with its
  // trailing newline (rancher/rancher@v2.14.3 pkg/systemtemplate/import.go, CAChecksum), and a
  // trimmed PEM's checksum would never match.
  const caCertificate = r.text(o.caCertificate, "rancher.caCertificate");
  // A private key pasted here is reported by checkPlainSecrets, without echoing it.
  if (
    caCertificate !== undefined &&
    !caCertificate.includes("-----BEGIN CERTIFICATE-----") &&
    !/PRIVATE KEY-----/.test(caCertificate)
  ) {
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
    const settings = readClusterSettings(r, c, path, name, keyIsRead(deploy, `${path}.version`));
    downstreamClusters.push({
      ...settings,
      insecureRegistration: DOWNSTREAM_CLUSTER_KEYS.insecureRegistration.read(
        r,
        c.insecureRegistration,
        `${path}.insecureRegistration`,
      ),
    });
  });
  if (url === undefined) {
    // Given and malformed, it is reported above; absent, it is reported when required.
    return o.url === undefined && (!deploy.rancherClusters || urlNotAtHand)
      ? { caCertificate, downstreamClusters }
      : undefined;
  }
  if (hostname === undefined) return undefined;
  return { url, hostname, caCertificate, downstreamClusters };
}

/** An RKE2 setting name, or one written `name+` to append to its list. */
const RKE2_FLAG = /^[a-z0-9][a-z0-9-]*[a-z0-9]\+?$/;

/**
 * Pass-through settings that would reset, move or split etcd, rename the node, or undo a fix
 * the stack declares, each with why: written into every server's config.yaml and applied by a
 * restart, each one does at once on every server what an operator does once, by hand, if ever.
 */
const REFUSED_PASS_THROUGH: Readonly<Record<string, (value: unknown) => string | undefined>> = {
  "data-dir": () =>
    "moves RKE2's data: a server restarted with another data-dir starts an empty etcd member, or a " +
    "new cluster on the first server. The product reads each server's data-dir from its files; " +
    "move data by hand, one stopped server at a time, if ever.",
  "cluster-reset": () =>
    "resets etcd to a one-member cluster at the next start of every server it reaches; it is a " +
    "recovery step run by hand on one stopped server (rke2 server --cluster-reset), never a setting.",
  "cluster-reset-restore-path": () =>
    "restores etcd from a snapshot at the next start; it is a recovery step run by hand on one " +
    "stopped server (rke2 server --cluster-reset --cluster-reset-restore-path=...), never a setting.",
  // rancher/rke2@v1.35.7+rke2r1:pkg/cli/cmds/profile_linux.go validateProfile (the same v1.33 to v1.36).
  profile: (value) =>
    knownProfile(String(value)) !== undefined
      ? undefined
      : `"${String(value)}" is not a profile RKE2 knows (${RKE2_PROFILES.join(", ")}): RKE2 exits ` +
        `at start ("invalid value provided for --profile flag").`,
  "with-node-id": () =>
    "appends a random suffix to the node name: each server would register a new Node and etcd " +
    "member, and its join gate would wait for a name that never comes.",
  "disable-kube-proxy": (value) =>
    String(value) === "false"
      ? undefined
      : "removes kube-proxy, which the stack configures (rke2.kubeProxyMode; NodeLocalDNS in IPVS " +
        "mode depends on it), and with it every Service address on the nodes.",
  disable: (value) =>
    (Array.isArray(value) ? value : [value]).some((v) =>
      String(v)
        .split(",")
        .map((x) => x.trim())
        .includes("rke2-coredns"),
    )
      ? "lists rke2-coredns: the cluster would have no DNS, and the CoreDNS fix the stack delivers " +
        "(a HelmChartConfig of rke2-coredns, seed 000) would have no chart to apply to."
      : undefined,
};

/**
 * Pass-through RKE2 settings (`rke2.extraConfig`, `rke2.serverConfig`, `rke2.agentConfig`,
 * `nodes[i].extraConfig`, `rancher.downstreamClusters[i].extraConfig`): a map of `rke2 server
 * --help` keys to a scalar or a list of scalars. A key the product manages is refused with the
 * stack key that sets it, and so is a `*-arg` entry for a flag the product renders.
 */
function readPassThrough(
  r: ConfigReader,
  value: unknown,
  path: string,
): Rke2PassThrough | undefined {
  if (value === undefined) return undefined;
  const o = r.object(value, path);
  if (!o) return undefined;
  const settings: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(o)) {
    const at = `${path}.${key}`;
    if (!RKE2_FLAG.test(key)) {
      r.problem(
        at,
        `"${key}" is not an RKE2 setting name; write it as rke2 server --help spells it, e.g. node-taint.`,
      );
      continue;
    }
    // `name+` appends to RKE2's `name` (k3s-io/k3s@7464a828:pkg/configfilearg/parser.go).
    const name = key.replace(/\+$/, "");
    const manager = MANAGED_RKE2_KEYS[name];
    if (manager !== undefined) {
      r.problem(at, `is a setting the product manages; set it through ${manager} instead.`);
      continue;
    }
    const refused = REFUSED_PASS_THROUGH[name]?.(setting);
    if (refused !== undefined) {
      r.problem(at, `${refused} Remove it from ${path}.`);
      continue;
    }
    const scalar = (v: unknown) => ["string", "number", "boolean"].includes(typeof v);
    if (!scalar(setting) && !(Array.isArray(setting) && setting.every(scalar))) {
      r.problem(at, "must be a string, number, boolean or a list of them, as in config.yaml.");
      continue;
    }
    const managedFlags = ARG_LIST_FLAGS_MANAGED[name] ?? {};
    const taken = isArgList(name)
      ? (Array.isArray(setting) ? setting : [setting]).map(argFlag).filter((f) => f in managedFlags)
      : [];
    if (taken.length > 0) {
      r.problem(
        at,
        `sets ${taken.join(", ")}, which the product renders from ${taken.map((f) => managedFlags[f]).join(", ")}; set it there instead.`,
      );
      continue;
    }
    settings[key] = setting;
  }
  return settings;
}

/**
 * `nodes`: required, each with its SSH host key, while a part of the stack's selection works on
 * nodes; a node's roles, while a part needs them (`rolesRequired`).
 */
function readNodes(
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

/** `dns`; the upstream resolvers are required where a cluster DNS is rendered. */
function readDns(r: ConfigReader, value: unknown, upstreamsRequired: boolean): DnsSettings {
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
  const v = readSettings(r, DNS_KEYS, o, "dns");
  const neutralizedSearchDomains = (v.neutralizedSearchDomains ?? [])
    .map((d, i) => hostnameOf(r, d, `dns.neutralizedSearchDomains[${i}]`))
    .filter((d): d is string => d !== undefined);
  const nl = readSettings(
    r,
    NODE_LOCAL_KEYS,
    r.object(o.nodeLocal, "dns.nodeLocal") ?? {},
    "dns.nodeLocal",
  );
  const nodeLocal = {
    enabled: nl.enabled,
    ip: ipOf(r, nl.ip, "dns.nodeLocal.ip") ?? NODE_LOCAL_KEYS.ip.fallback,
  };
  const upstreamList = r.array(o.upstreamResolvers, "dns.upstreamResolvers");
  if (upstreamsRequired && (!upstreamList || upstreamList.length === 0)) {
    r.problem(
      "dns.upstreamResolvers",
      "lists no resolver; give the addresses the cluster DNS forwards to (at least two).",
    );
  }
  const upstreamResolvers = (upstreamList ?? [])
    .map((ip, i) => readIp(r, ip, `dns.upstreamResolvers[${i}]`))
    .filter((ip): ip is string => ip !== undefined);
  const policyNamespaces = readPolicyNamespaces(r, o.policyNamespaces);
  return { staticHosts, neutralizedSearchDomains, nodeLocal, upstreamResolvers, policyNamespaces };
}

/**
 * `dns.policyNamespaces`: a name (the DNS egress policy as an allowance, checked at `up` against
 * the namespace's own egress policies) or `{ name, isolate }`. `isolate: true` makes the
 * namespace default-deny egress except DNS, which Rancher's and RKE2's own namespaces can never
 * be: Rancher would lose its API and the cluster agents Rancher, CoreDNS its upstreams.
 */
function readPolicyNamespaces(r: ConfigReader, value: unknown): DnsPolicyNamespace[] {
  const entries: DnsPolicyNamespace[] = [];
  const seen = new Map<string, number>();
  (r.array(value, "dns.policyNamespaces") ?? []).forEach((item, i) => {
    const path = `dns.policyNamespaces[${i}]`;
    let name: string | undefined;
    let isolate = false;
    if (typeof item === "string") {
      name = item;
    } else if (typeof item === "object" && item !== null && !Array.isArray(item)) {
      const o = item as Record<string, unknown>;
      name = r.requiredString(o.name, `${path}.name`, "give the namespace's name.");
      isolate = POLICY_NAMESPACE_KEYS.isolate.read(r, o.isolate, `${path}.isolate`);
    } else {
      r.problem(
        path,
        'is neither a namespace name nor a map { name, isolate }; write "<namespace>" or { name: <namespace>, isolate: true }.',
      );
      return;
    }
    if (name === undefined) return;
    const namePath = typeof item === "string" ? path : `${path}.name`;
    if (!K8S_NAME.test(name)) {
      r.problem(namePath, `"${name}" is not a Kubernetes namespace name.`);
      return;
    }
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      r.problem(
        namePath,
        `"${name}" is also dns.policyNamespaces[${earlier}]; list each namespace once.`,
      );
      return;
    }
    seen.set(name, i);
    const owner = systemNamespaceOwner(name);
    if (isolate && owner) {
      r.problem(
        `${path}.isolate`,
        `${name} is ${owner}'s own namespace; isolate: true would make it default-deny egress ` +
          "except DNS and cut it off from the Kubernetes API and everything else (Rancher from " +
          "its API and the cluster agents, CoreDNS from its upstreams: seed 000's symptom). Remove " +
          "isolate; the allowance then goes in only where an egress policy of the namespace's own " +
          "already restricts its pods, which `up` checks.",
      );
      return;
    }
    entries.push({ name, isolate });
  });
  return entries;
}

function readNodePreparation(r: ConfigReader, value: unknown): NodePreparationSettings {
  const o = r.object(value, "nodePreparation") ?? {};
  const settings = readSettings(r, NODE_PREPARATION_KEYS, o, "nodePreparation");
  for (const p of unmanagedDevicesProblems(settings.unmanagedDevices)) {
    const index = p.index === undefined ? "" : `[${p.index}]`;
    r.problem(`nodePreparation.unmanagedDevices${index}`, p.message);
  }
  return settings;
}

function readDeploy(r: ConfigReader, value: unknown): DeploySelection {
  // Keys other than these are reported by checkKnownKeys.
  return readSettings(r, DEPLOY_KEYS, r.object(value, "deploy") ?? {}, "deploy");
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

/**
 * A fixed registration address must be in tls-san: joining servers and agents check the
 * servers' certificate for it. Each server's own addresses need no entry (RKE2 adds them).
 */
function checkRegistrationAddress(
  r: ConfigReader,
  management: ClusterSettings,
  nodes: NodeSpec[],
): void {
  const address = management.registrationAddress;
  if (address === undefined) return;
  const node = nodes.find((n) => n.cluster === MANAGEMENT_CLUSTER && n.ip === address);
  if (node) {
    r.problem(
      "rke2.registrationAddress",
      `${address} is the address of node ${node.name}, and a server cannot join through itself; set a VIP or DNS name in front of the servers, or remove the key to join through the first server.`,
    );
  }
  if (!management.tlsSan.some((san) => san.toLowerCase() === address)) {
    r.problem(
      "rke2.tlsSan",
      `does not list ${r.key("rke2.registrationAddress")} ${address}; add "${address}" to rke2.tlsSan, or joining servers and agents that register through it cannot verify the servers' certificate.`,
    );
  }
}

function checkDownstreamMembership(
  r: ConfigReader,
  nodes: NodeSpec[],
  rancher: RancherSettings | undefined,
  caNotAtHand: boolean,
): void {
  rancher?.downstreamClusters.forEach((c, i) => {
    const members = nodes.filter((n) => n.cluster === c.name);
    // rancher/rancher@v2.14.3 pkg/capr/planner/planner.go (clusterIsSane): no node gets a plan
    // until an etcd, a controlplane and a worker node are registered.
    const missing = missingRoles(members);
    if (missing.length > 0) {
      r.problem(
        `rancher.downstreamClusters[${i}]`,
        `cluster "${c.name}" has no node with role ${missing.join(", ")}; Rancher delivers no plan to any node until an etcd, a controlplane and a worker node are registered (seed 000: nodes sit unprovisioned). Add one under nodes with cluster: ${c.name}.`,
      );
    } else {
      try {
        registrationPlan(members);
      } catch (err) {
        r.problem(`rancher.downstreamClusters[${i}]`, (err as Error).message);
      }
    }
    // The management stack's CA, when its outputs are not at hand, is reported with them.
    if (!c.insecureRegistration && rancher.caCertificate === undefined && !caNotAtHand) {
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
    const cluster = clusters.find((c) => inZone(domain, c.clusterDomain));
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
  estate: {
    readonly deploy: DeploySelection;
    readonly nodes: readonly NodeSpec[];
    readonly rancher: RancherSettings | undefined;
    readonly management: ClusterSettings;
  },
): void {
  const { nodes, rancher, management } = estate;
  const needed = new Set<string>(["sshPrivateKey"]);
  if (nodes.some((n) => n.roles.includes("server"))) needed.add("rke2Token");
  if (rancher && rancher.downstreamClusters.length > 0) needed.add("rancherToken");
  if (management.dnsDelivery === "helmChartConfig") needed.add("kubeconfig");
  // Only a part of the selection that is on uses a secret (deploy-parts.ts).
  for (const key of needed) if (!keyIsRead(estate.deploy, key)) needed.delete(key);
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
        `is not set; set it with \`pulumi config set --secret ${key}\` (a file on stdin: \`pulumi config set --secret ${key} < <file>\`).`,
      );
    }
  }
}

/** Bounds of the five cron fields, in order. */
const CRON_FIELDS: readonly {
  readonly name: string;
  readonly min: number;
  readonly max: number;
}[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day-of-month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12 },
  { name: "day-of-week", min: 0, max: 6 },
];

/**
 * RKE2's `etcd-snapshot-schedule-cron` is parsed by robfig/cron (rancher/rke2@v1.35.7+rke2r1:go.mod
 * pins github.com/robfig/cron/v3 v3.0.1). Its field bounds are minute 0-59, hour 0-23, day of
 * month 1-31, month 1-12, day of week 0-6 (robfig/cron@v3.0.1:spec.go); a range may not start
 * after its end, `N/step` runs from N to the field's maximum, and a step must be positive
 * (robfig/cron@v3.0.1:parser.go, getRange).
 */
function checkCronSchedule(r: ConfigReader, path: string, schedule: string): void {
  const fields = schedule.split(/\s+/);
  if (fields.length !== 5 || !fields.every((f) => CRON_FIELD.test(f))) {
    r.problem(path, `"${schedule}" is not a five-field cron schedule, e.g. "0 */6 * * *".`);
    return;
  }
  const wrong = fields
    .map((field, i) => ({
      field,
      bounds: CRON_FIELDS[i],
      why: cronFieldProblem(field, CRON_FIELDS[i]),
    }))
    .filter((f) => f.why !== undefined);
  if (wrong.length > 0) {
    r.problem(
      path,
      `"${schedule}": ` +
        wrong.map((f) => `${f.bounds.name} field "${f.field}": ${f.why}`).join("; ") +
        `. The fields are minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-6; ` +
        `fix the field, e.g. "0 */6 * * *" for every six hours.`,
    );
  }
}

/** Why one cron field is outside its bounds, or undefined when it is not. */
function cronFieldProblem(
  field: string,
  bounds: { readonly min: number; readonly max: number },
): string | undefined {
  for (const range of field.split(",")) {
    const [span, step, ...extra] = range.split("/");
    if (extra.length > 0) return `"${range}" has more than one "/"`;
    if (step !== undefined && !/^[1-9]\d*$/.test(step)) {
      return `the step "${step}" is not a positive whole number`;
    }
    if (span === "*") continue;
    const ends = span.split("-");
    if (ends.length > 2 || !ends.every((e) => /^\d+$/.test(e))) {
      return `"${range}" is neither *, a number nor a range low-high`;
    }
    const start = Number(ends[0]);
    const end = ends.length === 2 ? Number(ends[1]) : step !== undefined ? bounds.max : start;
    if (start < bounds.min || start > bounds.max || end > bounds.max) {
      return `${span} is outside ${bounds.min}-${bounds.max}`;
    }
    if (start > end) return `the range ${span} starts after it ends`;
  }
  return undefined;
}

/**
 * A key in a namespace one edit from ours (`rke2-remediaton:rke2`) is a typo: Pulumi keeps its
 * value and this program never reads it.
 */
function checkNamespaces(r: ConfigReader, raw: RawStackConfig): void {
  for (const fullKey of raw.otherNamespaceKeys ?? []) {
    const colon = fullKey.indexOf(":");
    const namespace = fullKey.slice(0, colon);
    const key = fullKey.slice(colon + 1);
    if (namespace === CONFIG_NAMESPACE || editDistance(namespace, CONFIG_NAMESPACE) > 1) continue;
    const top = key.split(/[.[]/)[0];
    const known = closest(top, Object.keys(STACK_CONFIG_KEYS)) ?? top;
    r.problemAtFullKey(
      fullKey,
      `is in namespace "${namespace}", one edit from "${CONFIG_NAMESPACE}"; this program reads ` +
        `only ${CONFIG_NAMESPACE}:* keys, so the value is ignored. Did you mean ` +
        `${r.key(known + key.slice(top.length))}? Rename the key.`,
    );
  }
}

/** Reports every key, at any depth, that STACK_CONFIG_KEYS does not list. */
function checkKnownKeys(r: ConfigReader, raw: RawStackConfig): void {
  const top: Record<string, unknown> = { ...raw.values };
  for (const key of raw.secretKeys) if (!(key in top)) top[key] = "";
  walkKnownKeys(r, top, STACK_CONFIG_KEYS, "");
}

function walkKnownKeys(r: ConfigReader, value: unknown, schema: KeySchema, path: string): void {
  if (isSetting(schema)) return;
  if (isListSchema(schema)) {
    if (Array.isArray(value)) {
      value.forEach((item, i) => walkKnownKeys(r, item, schema[0], `${path}[${i}]`));
    }
    return;
  }
  // A value of the wrong shape is reported by the reader of that key.
  if (typeof value !== "object" || value === null || Array.isArray(value)) return;
  const known = Object.keys(schema);
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (Object.prototype.hasOwnProperty.call(schema, key)) {
      walkKnownKeys(r, child, schema[key], childPath);
      continue;
    }
    const near = closest(key, known);
    r.problem(
      childPath,
      "is not a setting this program uses here, so its value would be ignored without a word" +
        (near ? `; did you mean ${r.key(path ? `${path}.${near}` : near)}?` : ".") +
        " Rename or remove it.",
    );
  }
}

/**
 * Each cluster's RKE2 release must be in the release table, and with NodeLocalDNS and fix zones
 * its rke2-coredns chart must read `nodelocal.extraClusterDomains`: an older chart ignores the key,
 * and the node-local cache forwards the fix's zones to the node's resolvers (seed 000 again).
 */
function checkDnsAgainstReleases(
  r: ConfigReader,
  dns: DnsSettings,
  clusters: ClusterSettings[],
): void {
  clusters.forEach((cluster, i) => {
    // A missing or malformed version is reported where it is read.
    if (!RKE2_VERSION.test(cluster.version)) return;
    const path =
      cluster.name === MANAGEMENT_CLUSTER
        ? "rke2.version"
        : `rancher.downstreamClusters[${i - 1}].version`;
    const problem = releaseDnsProblem(dns, cluster);
    const line = minorLineOf(cluster.version) ?? "";
    if (problem?.kind === "releaseNotInTable") {
      const newest = newestReleaseOn(line);
      r.problem(
        path,
        `"${cluster.version}" is not in the RKE2 release table (${RELEASE_TABLE_MODULE}), so the ` +
          "rke2-coredns chart it ships, and the cluster DNS it would run, are unknown. Add the " +
          "release to that table with the rke2-coredns version from rancher/rke2 " +
          "charts/chart_versions.yaml at its tag, or use a release the table lists (" +
          (newest ? `newest on ${line}: ${newest}` : `lines ${knownMinorLines().join(", ")}`) +
          ").",
      );
    } else if (problem?.kind === "nodeLocalBypassesFix") {
      r.problem(
        path,
        `${problem.release} ships rke2-coredns ${problem.chart}, which has no ` +
          `nodelocal.extraClusterDomains (the chart reads it from 1.46.003 on); with ` +
          `${r.key("dns.nodeLocal.enabled")} the node-local cache would send ` +
          `${problem.zones.join(", ")} to the node's resolvers instead of CoreDNS, bypassing the ` +
          "fix, and *.local lookups would time out again (seed 000). " +
          (problem.firstFixedRelease
            ? `Use ${problem.firstFixedRelease} or later on the ${line} line`
            : `No ${line} release has it; move to a line that does (${knownMinorLines().join(", ")})`) +
          ", or turn NodeLocalDNS off.",
      );
    }
  });
}

/**
 * The cluster DNS answers the Rancher hostname from `dns.staticHosts`; Rancher runs on the
 * management servers, and a stack without them (a downstream-only stack) knows Rancher's
 * addresses from its libvirt records. An answer that differs sends cluster agents somewhere other
 * than nodes and browsers go. When the stack gives no answer for the Rancher host, the answer is
 * derived from the same source (seed 000: pods must reach Rancher without the search list);
 * returned as the static host entry to add.
 */
function checkRancherStaticHosts(
  r: ConfigReader,
  dns: DnsSettings,
  libvirt: LibvirtSettings | undefined,
  rancher: RancherSettings | undefined,
  nodes: NodeSpec[],
  allNodesRead: boolean,
): Record<string, string[]> | undefined {
  // Comparing with the servers is only meaningful when every node entry was read.
  const host = rancher?.hostname;
  if (host === undefined || !allNodesRead) return undefined;
  const answered = dns.staticHosts[host];
  const staticKey = `dns.staticHosts["${host}"]`;
  const same = (a: readonly string[], b: readonly string[]) =>
    [...new Set(a)].sort().join(",") === [...new Set(b)].sort().join(",");
  const servers = nodes
    .filter((n) => n.cluster === MANAGEMENT_CLUSTER && n.roles.includes("server"))
    .map((n) => n.ip);
  const records = libvirt?.dnsRecords[host];
  if (answered === undefined) {
    const derived = servers.length > 0 ? servers : (records ?? []);
    return derived.length > 0 ? { [host]: [...derived] } : undefined;
  }
  if (servers.length > 0) {
    if (!same(answered, servers)) {
      r.problem(
        staticKey,
        `lists ${answered.join(", ") || "no address"}, but Rancher (${host}) runs on the management ` +
          `servers ${servers.join(", ")} (${r.key("nodes")}, role server); cluster agents would ` +
          "be sent elsewhere than nodes and browsers. List exactly the servers.",
      );
    }
  } else if (records !== undefined && !same(answered, records)) {
    r.problem(
      staticKey,
      `lists ${answered.join(", ") || "no address"}, but ${r.key(`libvirt.dnsRecords["${host}"]`)} ` +
        `lists ${records.join(", ") || "no address"}; pods and nodes would reach Rancher at ` +
        "different addresses. Make both list the same addresses.",
    );
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Estate mistakes that are well-formed values: addresses no host can have, ranges that swallow
// RKE2's own ports, names and ports that cannot work, secrets pasted into plain keys. Each is
// checked against the values as read, so one run names them all.
// ---------------------------------------------------------------------------------------------

/** The inputs of the estate checks, as validateEnvironment has read them. */
interface EstateFacts {
  readonly raw: RawStackConfig;
  readonly libvirt: LibvirtSettings | undefined;
  readonly clusters: readonly ClusterSettings[];
  readonly nodes: readonly NodeSpec[];
  readonly dns: DnsSettings;
  readonly rancher: RancherSettings | undefined;
}

function checkEstateMistakes(r: ConfigReader, facts: EstateFacts): void {
  const gateway = facts.libvirt?.gateway;
  checkNodeAddresses(r, facts, gateway);
  checkRegistrationAddressPlacement(r, facts, gateway);
  checkClusterNetworkSizes(r, facts.clusters);
  checkReservedClusterNetworks(r, facts.clusters);
  checkNodePortRanges(r, facts.clusters, facts.nodes);
  checkPrivateRegistryPorts(r, facts.clusters);
  checkDnsServerAddresses(r, facts.dns);
  checkEmptyAddressLists(r, facts.raw.values);
  checkSshEndpoints(r, facts);
  checkRancherUrlHost(r, facts.raw.values.rancher);
  checkPlainSecrets(r, facts.raw);
}

/** The stack key of a cluster's settings: `rke2` or `rancher.downstreamClusters[i]`. */
function clusterPath(cluster: ClusterSettings, index: number): string {
  return cluster.name === MANAGEMENT_CLUSTER ? "rke2" : `rancher.downstreamClusters[${index - 1}]`;
}

/** Where a node is listed in the stack's `nodes`, matched by its (unique, lowercase) name. */
function nodeIndex(values: RawStackConfig["values"], node: NodeSpec): number {
  const list = Array.isArray(values.nodes) ? (values.nodes as unknown[]) : [];
  return list.findIndex((item) => {
    const name = (item as { name?: unknown } | null)?.name;
    return typeof name === "string" && name.trim().toLowerCase() === node.name;
  });
}

/**
 * IPv4 blocks no node, pod or service address may be in: RFC 6890's "this network", loopback and
 * reserved blocks, RFC 5771's multicast block, and the link-local block, which is reachable only
 * on its own link (RFC 3927) and holds the NodeLocalDNS address.
 */
const NOT_UNICAST: readonly { readonly cidr: Cidr; readonly what: string }[] = [
  { text: "0.0.0.0/8", what: 'the "this network" block (0.0.0.0 is the unspecified address)' },
  { text: "127.0.0.0/8", what: "the loopback block" },
  { text: "169.254.0.0/16", what: "the link-local block" },
  { text: "224.0.0.0/4", what: "the multicast block" },
  { text: "240.0.0.0/4", what: "the reserved block (255.255.255.255 is the broadcast address)" },
].map((b) => ({ cidr: parseCidr(b.text)!, what: b.what }));

/** Private blocks (RFC 1918). */
const PRIVATE_BLOCKS: readonly Cidr[] = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"].map((t) =>
  parseCidr(t)!,
);
const LINK_LOCAL = parseCidr("169.254.0.0/16")!;

function specialBlockOf(ip: string): string | undefined {
  return NOT_UNICAST.find((b) => cidrContains(b.cidr, ip))?.what;
}

/**
 * `libvirt.gateway`: the KVM host's address on the libvirt network, which its dnsmasq serves
 * and the nodes route through. Default: the subnet's first address, where libvirt's default
 * network puts it (libvirt/libvirt@2b9e27710 src/network/default.xml.in: `<ip
 * address='192.168.122.1' netmask='255.255.255.0'>`, DHCP from .2 to .254).
 */
function libvirtGateway(
  r: ConfigReader,
  given: string | undefined,
  subnet: Cidr | undefined,
): string | undefined {
  if (given === undefined) {
    return subnet && subnet.prefix <= 30 ? numberToIp(subnet.base + 1) : undefined;
  }
  const ip = ipOf(r, given, "libvirt.gateway");
  if (ip === undefined || !subnet) return undefined;
  const size = cidrSize(subnet);
  if (
    !cidrContains(subnet, ip) ||
    ip === numberToIp(subnet.base) ||
    ipToNumber(ip) === subnet.base + size - 1
  ) {
    r.problem(
      "libvirt.gateway",
      `${ip} is not a host address of ${r.key("libvirt.subnet")} ${subnet.text}; set the address ` +
        "the KVM host has on the network (`virsh net-dumpxml <network>`, the <ip address=...> element).",
    );
    return undefined;
  }
  return ip;
}

/**
 * Why `ip` cannot be a host on the node network (nodes, a registration VIP), or undefined.
 * `gateway` and the KVM host's own address belong to the KVM host.
 */
function addressNoNodeCanHave(
  ip: string,
  facts: EstateFacts,
  gateway: string | undefined,
): string | undefined {
  const special = specialBlockOf(ip);
  if (special) return `${ip} is in ${special}, where no node of the estate can be reached`;
  const subnet = facts.libvirt ? parseCidr(facts.libvirt.subnet) : undefined;
  if (subnet && cidrContains(subnet, ip) && subnet.prefix <= 30) {
    if (ipToNumber(ip) === subnet.base) {
      return `${ip} is the network address of libvirt.subnet ${subnet.text}, which no host can have`;
    }
    if (ipToNumber(ip) === subnet.base + cidrSize(subnet) - 1) {
      return `${ip} is the broadcast address of libvirt.subnet ${subnet.text}, which no host can have`;
    }
  }
  if (ip === gateway) {
    return `${ip} is the libvirt network's gateway, the KVM host's own address on it (libvirt.gateway)`;
  }
  if (ip === facts.libvirt?.ssh?.host) {
    return `${ip} is the KVM host's own address (libvirt.ssh.host)`;
  }
  for (const [i, c] of facts.clusters.entries()) {
    const path = clusterPath(c, i);
    const nets: [string, string][] = [
      [`${path}.clusterCidr`, c.clusterCidr],
      [`${path}.serviceCidr`, c.serviceCidr],
    ];
    for (const [key, text] of nets) {
      const net = parseCidr(text);
      if (net && cidrContains(net, ip)) {
        return `${ip} lies inside ${key} ${text}, which the cluster routes to pods or services, not to nodes`;
      }
    }
  }
  return undefined;
}

function checkNodeAddresses(
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

/**
 * A registration address is a VIP or name in front of the management servers; a downstream
 * node's address is another cluster's machine, and the KVM host's or a reserved address is no
 * server at all. (A management node's own address is refused by checkRegistrationAddress.)
 */
function checkRegistrationAddressPlacement(
  r: ConfigReader,
  facts: EstateFacts,
  gateway: string | undefined,
): void {
  const management = facts.clusters.find((c) => c.name === MANAGEMENT_CLUSTER);
  const address = management?.registrationAddress;
  if (address === undefined || !isIpv4(address)) return;
  const downstream = facts.nodes.find((n) => n.cluster !== MANAGEMENT_CLUSTER && n.ip === address);
  const why = downstream
    ? `${address} is the address of node ${downstream.name} of downstream cluster ${downstream.cluster}, not of a management server`
    : addressNoNodeCanHave(address, facts, gateway);
  if (why) {
    r.problem(
      "rke2.registrationAddress",
      `${why}; joining servers and agents would register there. Set the VIP or DNS name in front of the management servers, or remove the key to join through the first server.`,
    );
  }
}

/**
 * The service CIDR holds kube-dns at its 10th address, which RKE2 renders as kubelet's
 * cluster-dns: in a /29 or smaller that address lies outside the range. The apiserver never
 * allocates an IPv4 range's network or broadcast address
 * (kubernetes/kubernetes@v1.35.4:pkg/registry/core/service/ipallocator/bitmap.go, New), so
 * .10 needs at least a /28. It refuses a range larger than /12
 * (kubernetes/kubernetes@v1.35.4:cmd/kube-apiserver/app/options/validation.go,
 * validateMaxCIDRRange with maxCIDRBits 20).
 */
function checkClusterNetworkSizes(r: ConfigReader, clusters: readonly ClusterSettings[]): void {
  clusters.forEach((c, i) => {
    const net = parseCidr(c.serviceCidr);
    if (!net) return;
    const key = `${clusterPath(c, i)}.serviceCidr`;
    if (net.prefix > 28) {
      r.problem(
        key,
        `${net.text} holds ${cidrSize(net)} addresses, too few for kube-dns at its 10th address: ` +
          `cluster-dns would be ${c.clusterDnsIp}, outside the range, and no pod could resolve a name. ` +
          "Use a /28 or larger service network, e.g. 10.43.0.0/16.",
      );
    } else if (net.prefix < 12) {
      r.problem(
        key,
        `${net.text} is larger than kube-apiserver accepts (at most a /12 for IPv4); it would not ` +
          "start. Use a /12 or smaller service network, e.g. 10.43.0.0/16.",
      );
    }
  });
}

/** Pod and service networks in blocks that are never routed as unicast (see NOT_UNICAST). */
function checkReservedClusterNetworks(r: ConfigReader, clusters: readonly ClusterSettings[]): void {
  clusters.forEach((c, i) => {
    const path = clusterPath(c, i);
    for (const [key, text] of [
      [`${path}.clusterCidr`, c.clusterCidr],
      [`${path}.serviceCidr`, c.serviceCidr],
    ] as const) {
      const net = parseCidr(text);
      const block = net && NOT_UNICAST.find((b) => cidrsOverlap(b.cidr, net));
      if (net && block) {
        r.problem(
          key,
          `${net.text} overlaps ${block.cidr.text}, ${block.what}; pod and service addresses there ` +
            "are not routed (and 169.254.0.0/16 holds the NodeLocalDNS address). Use a private " +
            "network such as 10.42.0.0/16 (pods) or 10.43.0.0/16 (services).",
        );
      }
    }
  });
}

/**
 * A neutralised search domain that contains the Rancher host makes the cluster DNS answer
 * NXDOMAIN for Rancher itself: the cluster agent never reaches it (seed 000, made by the fix).
 * An error in every stack shape, with or without libvirt records.
 */
function checkNeutralizedDomainsSpareRancher(
  r: ConfigReader,
  dns: DnsSettings,
  rancher: RancherSettings | undefined,
): void {
  const host = rancher?.hostname;
  if (host === undefined) return;
  dns.neutralizedSearchDomains.forEach((domain, i) => {
    if (!inZone(host, domain)) return;
    r.problem(
      `dns.neutralizedSearchDomains[${i}]`,
      `"${domain}" contains Rancher's host ${host} (${r.key("rancher.url")}); the cluster ` +
        `DNS would answer NXDOMAIN for it and the cluster agents would never reach Rancher (seed 000). ` +
        "Neutralise only the search domain the nodes hand to pods (their DHCP domain, `local` in the seeds).",
    );
  });
}

// A NodePort in the range is forwarded by kube-proxy on every node, so a service the apiserver
// happens to give one of RKE2's or the CNI's ports (../../components/node-preparation/ports.ts)
// takes that port's traffic away from RKE2.
function checkNodePortRanges(
  r: ConfigReader,
  clusters: readonly ClusterSettings[],
  nodes: readonly NodeSpec[],
): void {
  clusters.forEach((c, i) => {
    const m = /^(\d{1,5})-(\d{1,5})$/.exec(c.nodePortRange);
    if (!m) return; // reported where it is read
    const [low, high] = [Number(m[1]), Number(m[2])];
    const key = `${clusterPath(c, i)}.nodePortRange`;
    if (low < 1) {
      r.problem(
        key,
        `"${c.nodePortRange}" starts at port 0, which is no port; start at 1 or above, e.g. 30000-32767.`,
      );
      return;
    }
    const sshPorts = [...new Set(nodes.filter((n) => n.cluster === c.name).map((n) => n.ssh.port))];
    const covered = [
      ...clusterPortRules(c.cni),
      ...sshPorts.map((port) => ({ port, what: "SSH to the nodes" })),
    ].filter((p) => p.port >= low && p.port <= high);
    if (covered.length > 0) {
      r.problem(
        key,
        `${c.nodePortRange} covers ${covered.map((p) => `${p.port} (${p.what})`).join(", ")}; ` +
          "kube-proxy forwards every NodePort on every node, so a service given one of these " +
          "ports takes its traffic from the node. Use a range clear of them, e.g. 30000-32767.",
      );
    }
  });
}

function checkPrivateRegistryPorts(r: ConfigReader, clusters: readonly ClusterSettings[]): void {
  clusters.forEach((c, i) => {
    if (c.privateRegistry === undefined) return;
    const m = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(c.privateRegistry);
    if (!m) return; // reported where it is read
    const key = `${clusterPath(c, i)}.privateRegistry`;
    const [, host, port] = m;
    if (!isIpv4(host) && (!isHostname(host) || /(^|\.)\d+$/.test(host))) {
      r.problem(
        key,
        `"${host}" is neither an IPv4 address nor a DNS name; write the registry as host[:port], e.g. 192.168.122.156:30000.`,
      );
    }
    if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) {
      r.problem(
        key,
        `port ${port} is outside 1-65535; write the port the registry listens on, e.g. 192.168.122.156:30000.`,
      );
    }
  });
}

/**
 * `dns.nodeLocal.ip` is an address every node binds for the node-local cache: it must be one no
 * network routes, link-local (RFC 3927) or private (RFC 1918); a public address would capture
 * that host for every pod. An upstream resolver in a block that holds no unicast host cannot
 * answer; one on the link-local block is only reachable on its own link, which from a pod is
 * at best a node-local cache again (seed 004's loop). Loopback upstreams are reported with the
 * loop checks.
 */
function checkDnsServerAddresses(r: ConfigReader, dns: DnsSettings): void {
  const nodeLocal = dns.nodeLocal.ip;
  const special = specialBlockOf(nodeLocal);
  if (special && !cidrContains(LINK_LOCAL, nodeLocal)) {
    r.problem(
      "dns.nodeLocal.ip",
      `${nodeLocal} is in ${special}; the node-local cache cannot listen there. Use a link-local address such as 169.254.20.10.`,
    );
  } else if (!special && !PRIVATE_BLOCKS.some((b) => cidrContains(b, nodeLocal))) {
    r.problem(
      "dns.nodeLocal.ip",
      `${nodeLocal} is a public address; every node would answer it itself, so pods could no longer reach the real host. Use a link-local address such as 169.254.20.10.`,
    );
  }
  const seen = new Map<string, number>();
  dns.upstreamResolvers.forEach((ip, i) => {
    const path = `dns.upstreamResolvers[${i}]`;
    if (seen.has(ip)) {
      r.problem(
        path,
        `${ip} is also dns.upstreamResolvers[${seen.get(ip)}]; a second entry for the same server is no second resolver. List each resolver once.`,
      );
    } else seen.set(ip, i);
    // Loopback and the NodeLocalDNS address are reported by the loop checks.
    if (ip.startsWith("127.") || (dns.nodeLocal.enabled && ip === nodeLocal)) return;
    const block = specialBlockOf(ip);
    if (block) {
      r.problem(
        path,
        `${ip} is in ${block}, where no resolver can answer a pod's CoreDNS; use the address of a DNS server the nodes reach, e.g. the libvirt network's dnsmasq.`,
      );
    }
  });
}

/** A host entry with no address answers nothing (the cluster DNS) or adds no record (libvirt). */
function checkEmptyAddressLists(r: ConfigReader, values: RawStackConfig["values"]): void {
  const lists: [string, unknown, string][] = [
    [
      "dns.staticHosts",
      (values.dns as { staticHosts?: unknown } | undefined)?.staticHosts,
      "the cluster DNS would answer nothing for it",
    ],
    [
      "libvirt.dnsRecords",
      (values.libvirt as { dnsRecords?: unknown } | undefined)?.dnsRecords,
      "libvirt would get no record for it",
    ],
  ];
  for (const [key, map, effect] of lists) {
    if (typeof map !== "object" || map === null || Array.isArray(map)) continue;
    for (const [name, ips] of Object.entries(map)) {
      if (Array.isArray(ips) && ips.length === 0) {
        r.problem(
          `${key}["${name}"]`,
          `lists no address; ${effect}. List its IPv4 addresses, e.g. [192.168.122.20], or remove the entry.`,
        );
      }
    }
  }
}

/**
 * Every host the stack reaches over SSH is one machine: two nodes at one endpoint would prepare
 * and join the same machine twice, and a node at the KVM host's endpoint would disable the KVM
 * host's firewall and install RKE2 there.
 */
function checkSshEndpoints(r: ConfigReader, facts: EstateFacts): void {
  const endpoint = (ssh: SshEndpoint) => `${ssh.host.toLowerCase()}:${ssh.port}`;
  const seen = new Map<string, string>();
  const kvmHost = facts.libvirt?.ssh;
  if (kvmHost) seen.set(endpoint(kvmHost), "libvirt.ssh (the KVM host)");
  for (const node of facts.nodes) {
    const index = nodeIndex(facts.raw.values, node);
    const key = endpoint(node.ssh);
    const first = seen.get(key);
    if (first !== undefined) {
      r.problem(
        `nodes[${index}].ssh.host`,
        `node ${node.name} is reached at ${node.ssh.host} port ${node.ssh.port}, as ${first} is; every node is its own machine. Set the node's own SSH address (ssh.host, default its ip) or port.`,
      );
    } else seen.set(key, `nodes[${index}] (${node.name})`);
    if (!isIpv4(node.ssh.host) && !isHostname(node.ssh.host)) {
      r.problem(
        `nodes[${index}].ssh.host`,
        `"${node.ssh.host}" is neither an IPv4 address nor a DNS name; set the address SSH reaches node ${node.name} at, or remove the key to use its ip.`,
      );
    }
  }
  if (kvmHost && !isIpv4(kvmHost.host) && !isHostname(kvmHost.host)) {
    r.problem(
      "libvirt.ssh.host",
      `"${kvmHost.host}" is neither an IPv4 address nor a DNS name; set the KVM host's SSH address, e.g. 192.168.122.1.`,
    );
  }
}

/**
 * Rancher's node command carries its server-url setting's host as written
 * (rancher/rancher@v2.14.3:pkg/controllers/dashboard/clusterregistrationtoken/status.go,
 * getRootURL: url.Parse keeps the host's case), and registration compares it with
 * `rancher.url` exactly. Only a lowercase host is sure to match.
 */
function checkRancherUrlHost(r: ConfigReader, value: unknown): void {
  const url = (value as { url?: unknown } | null | undefined)?.url;
  if (typeof url !== "string") return;
  const m = /^https:\/\/([^/:@]+)(?::(\d+))?\/?$/.exec(url.trim());
  if (!m || !isHostname(m[1])) return; // reported where it is read
  const [, host, port] = m;
  if (host !== host.toLowerCase()) {
    r.problem(
      "rancher.url",
      `the host "${host}" has capitals; Rancher's registration command carries its server-url host as written and registration compares the two exactly. Write it in lowercase (https://${host.toLowerCase()}), as Rancher's server-url setting has it.`,
    );
  }
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) {
    r.problem(
      "rancher.url",
      `port ${port} is outside 1-65535; write the port Rancher serves HTTPS on, or leave it out for 443.`,
    );
  }
}

/**
 * Shapes of secret material. A plain key is written to the stack file and to Pulumi's state in
 * clear text; these belong in a secret key or nowhere.
 */
const SECRET_SHAPES: readonly { readonly pattern: RegExp; readonly what: string }[] = [
  { pattern: /-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----/, what: "a private key" },
  // k3s-io/k3s@0566d4571ef8:pkg/clientaccess/token.go: tokenPrefix "K10", a 64-hex CA hash, "::".
  { pattern: /\bK10[0-9a-f]{64}::/, what: "an RKE2 join token" },
  // rancher/rancher@v2.14.3:pkg/auth/tokens/manager.go: tokens are named "token-<random>";
  // API keys are "<name>:<key>".
  { pattern: /\btoken-[a-z0-9]{5}:[A-Za-z0-9]{20,}/, what: "a Rancher API token" },
  { pattern: /\b(client-key-data|client-certificate-data):/, what: "a kubeconfig's credentials" },
  { pattern: /--token[= ]+\S/, what: "a --token argument" },
  { pattern: /:\/\/[^/\s:@]+:[^/\s@]+@/, what: "a password in a URL" },
];

/** The kind of secret material a text holds, if any. */
function secretShapeOf(text: string): string | undefined {
  return SECRET_SHAPES.find((s) => s.pattern.test(text))?.what;
}

/** Every string value under plain keys, with its stack key path. */
function plainStrings(value: unknown, path: string, out: [string, string][]): [string, string][] {
  if (typeof value === "string") out.push([path, value]);
  else if (Array.isArray(value)) value.forEach((v, i) => plainStrings(v, `${path}[${i}]`, out));
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      const child = /^[A-Za-z][A-Za-z0-9]*$/.test(k) ? `${path}.${k}` : `${path}["${k}"]`;
      plainStrings(v, child, out);
    }
  }
  return out;
}

/**
 * Reports secret material in any plain key, naming the key and the kind, never the value. Runs
 * last: a key that holds a secret keeps only this problem, since the others at that key may quote
 * its value (`"<value>" must be host[:port]`).
 */
function checkPlainSecrets(r: ConfigReader, raw: RawStackConfig): void {
  const secretKeys: readonly string[] = SECRET_KEYS;
  const found: { key: string; message: string }[] = [];
  for (const [key, value] of Object.entries(raw.values)) {
    // A secret key stored in plain text is reported by checkSecrets.
    if (secretKeys.includes(key)) continue;
    for (const [path, text] of plainStrings(value, key, [])) {
      const shape = secretShapeOf(text);
      if (!shape) continue;
      found.push({
        key: r.key(path),
        message:
          `holds ${shape}, in a plain key: it is written in clear text to the stack file and ` +
          "to Pulumi's state. Remove it from this key (and from the file's history), replace " +
          "the credential, and give it only to the secret key that needs it " +
          `(${SECRET_KEYS.join(", ")}) with \`pulumi config set --secret\`.`,
      });
    }
  }
  const flagged = new Set(found.map((f) => f.key));
  const kept = r.problems.filter((p) => !flagged.has(p.key));
  r.problems.splice(0, r.problems.length, ...kept, ...found);
}

/**
 * Warnings about a valid stack: keys that its `deploy` selection leaves unused, what `up` will
 * check on the live estate, and a fix that would be lost without a word. `verify` prints them
 * and the program logs them; none stops a run. `raw` is the config the model was read from.
 */
export function configWarnings(model: EnvironmentModel, raw: RawStackConfig): ConfigProblem[] {
  const r = new ConfigReader(CONFIG_NAMESPACE);
  for (const { path, parts } of unusedKeys(raw.values, raw.secretKeys, model.deploy)) {
    r.problem(path, unusedKeyMessage(r, parts));
  }
  const { deploy } = model;
  if (keyIsRead(deploy, "dns.policyNamespaces")) {
    model.dns.policyNamespaces.forEach((entry, i) => {
      const owner = systemNamespaceOwner(entry.name);
      if (!owner) return;
      r.problem(
        `dns.policyNamespaces[${i}]`,
        `${entry.name} is ${owner}'s own namespace and can never be isolated: allow-dns-egress goes in ` +
          "there only where an egress policy of the namespace's own already selects every pod, which " +
          "`up` reads from the cluster before creating it, and stops on otherwise (the policy alone " +
          "would cut the namespace off from everything but DNS). Remove the entry unless that " +
          "restriction exists.",
      );
    });
  }
  checkKubeconfigMode(r, model);
  checkNodesOnSubnet(r, model);
  if (keyIsRead(deploy, "rke2.registries"))
    for (const { registry, index, endpoint } of endpointsWithoutScheme(model.management.registries))
      r.problem(
        `rke2.registries.mirrors["${registry}"].endpoint[${index}]`,
        `"${endpoint}" has no scheme, so RKE2 reaches it over HTTPS; a plain-HTTP registry needs ` +
          `http://${endpoint} (rke2-docs install/private_registry.md).`,
      );
  checkFirewalldChosen(r, model, raw);
  const upstreams = model.dns.upstreamResolvers;
  if (keyIsRead(deploy, "dns.upstreamResolvers") && upstreams.length === 1) {
    r.problem(
      "dns.upstreamResolvers",
      `only one upstream resolver (${upstreams[0]}): when it stops answering, as 114.114.114.114 ` +
        "did for HINFO probes in seed 004, every lookup outside the cluster waits for its timeout " +
        "and then fails; configure at least two.",
    );
  }
  const host = model.rancher?.hostname;
  // Only where the downstream clusters' DNS is rendered (deploy.clusterDns or rancherClusters).
  if (
    host !== undefined &&
    keyIsRead(deploy, "dns.staticHosts") &&
    model.dns.staticHosts[host] === undefined
  ) {
    model.rancher?.downstreamClusters.forEach((cluster, i) => {
      r.problem(
        `rancher.downstreamClusters[${i}]`,
        `cluster ${cluster.name}: its cluster DNS has no answer of its own for Rancher's host ` +
          `${host}, so the cluster agent depends on the nodes' upstream resolvers to ` +
          "reach Rancher (seed 000). Give it one: " +
          `${r.key(`dns.staticHosts["${host}"]`)}, ` +
          `${r.key(`libvirt.dnsRecords["${host}"]`)}, or the management servers in ` +
          `${r.key("nodes")} (role server).`,
      );
    });
  }
  return r.problems;
}

/**
 * A node off the libvirt network is allowed (the product reaches it over SSH), but the network's
 * DNS records, seed 000's fix, do not reach a node that does not use that network's DNS, and the
 * checks of records and addresses assume the subnet.
 */
/**
 * Stopping firewalld removes the host firewall its operators may rely on, so the default
 * (`disable`, RKE2's advice: rancher/rke2-docs@9477b7b1:docs/known_issues.md, "Firewalld
 * conflicts with default networking") is said before it happens, until the stack chooses.
 */
function checkFirewalldChosen(r: ConfigReader, model: EnvironmentModel, raw: RawStackConfig): void {
  if (!keyIsRead(model.deploy, "nodePreparation.firewalld")) return;
  const section = raw.values.nodePreparation;
  const chosen = typeof section === "object" && section !== null && "firewalld" in section;
  if (chosen) return;
  r.problem(
    "nodePreparation.firewalld",
    "not set, so `disable`: on every node where firewalld.service is enabled or running, `up` " +
      "disables it, and stops it where its stop flushes no other rules (RKE2: firewalld conflicts " +
      "with its networking), which removes the host firewall its zones give. Set `disable` to " +
      "confirm, or `keep` to keep firewalld and open RKE2's and the CNI's ports in its zones " +
      "yourself; `up` then checks the TCP ones from every node's peers and stops, naming any " +
      "that are blocked.",
  );
}

function checkNodesOnSubnet(r: ConfigReader, model: EnvironmentModel): void {
  const subnet = parseCidr(model.libvirt.subnet);
  if (!subnet) return;
  model.nodes.forEach((node, i) => {
    if (cidrContains(subnet, node.ip)) return;
    r.problem(
      `nodes[${i}].ip`,
      `${node.ip} (${node.name}) is outside ${r.key("libvirt.subnet")} ${subnet.text}: the node is ` +
        `not on the libvirt network, so that network's DNS records (${r.key("libvirt.dnsRecords")}) ` +
        "do not answer its lookups unless its resolver is that network's dnsmasq. Correct the " +
        "address if it is a typo; otherwise give the node a resolver that has Rancher's name.",
    );
  });
}

/**
 * An admin kubeconfig every local user can read: `write-kubeconfig-mode` with the bit for
 * others set hands cluster-admin to any account on the server.
 */
function checkKubeconfigMode(r: ConfigReader, model: EnvironmentModel): void {
  const levels: [string, Rke2PassThrough | undefined][] = [
    ["rke2.extraConfig", model.management.extraConfig],
    ["rke2.serverConfig", model.management.serverConfig],
    ...model.nodes.map((n, i): [string, Rke2PassThrough | undefined] => [
      `nodes[${i}].extraConfig`,
      n.extraConfig,
    ]),
  ];
  for (const [path, level] of levels) {
    const mode = level?.["write-kubeconfig-mode"];
    if (mode === undefined || !/^[0-7]{3,4}$/.test(String(mode))) continue;
    if ((parseInt(String(mode), 8) & 0o004) === 0) continue;
    r.problem(
      `${path}.write-kubeconfig-mode`,
      `"${String(mode)}" lets every local user of the server read the admin kubeconfig ` +
        `(/etc/rancher/rke2/rke2.yaml), that is, act as cluster-admin. Use 0600, or 0640 with ` +
        `write-kubeconfig-group for a group that needs it.`,
    );
  }
}

/** "is unused because deploy.x is false ...": a key that only parts turned off read. */
function unusedKeyMessage(r: ConfigReader, parts: readonly DeployPart[]): string {
  const switches = parts.map((p) => r.key(`deploy.${p}`));
  const one = switches.length === 1;
  const listed = one
    ? `${switches[0]} is`
    : `${switches.slice(0, -1).join(", ")} and ${switches[switches.length - 1]} are`;
  return (
    `is unused because ${listed} false, and only ${one ? "that part reads" : "those parts read"} ` +
    `it: its value changes nothing. Remove it, or turn ${one ? "that part" : "one of them"} on.`
  );
}
