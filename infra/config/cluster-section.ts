/**
 * `rke2` and each downstream cluster's settings: version, networks, etcd snapshots (their cron
 * schedule), the registration address, the RKE2 profile.
 */
import {
  ClusterSettings,
  MANAGEMENT_CLUSTER,
  NodeSpec,
  isIpv4,
  nthAddress,
  parseCidr,
} from "../../components/model";
import { ConfigReader } from "./reader";
import { readArtifacts } from "./artifacts";
import { readRegistries } from "./registries";
import {
  knownProfile,
  profileSettingOf,
  protectKernelDefaultsOff,
} from "../../components/node-preparation/profile";
import {
  CLUSTER_KEYS,
  ETCD_SNAPSHOT_KEYS,
  JOIN_GATE_KEYS,
  DRAIN_KEYS,
  MANAGEMENT_ONLY_KEYS,
  readSettings,
} from "./stack-keys";
import { addressNoNodeCanHave } from "./network-checks";
import { readPassThrough } from "./pass-through";
import { EstateFacts, cidrOf, hostnameOf, isHostname } from "./values";

export const RKE2_VERSION = /^v1\.\d+\.\d+\+rke2r\d+$/;
const CRON_FIELD = /^[\d*/,-]+$/;

/**
 * A cluster's settings, the management cluster's (`rke2`) or a downstream one's. A downstream
 * cluster takes the management-only settings' defaults; checkKnownKeys reports one it gives.
 */
export function readClusterSettings(
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
export function checkProfiles(
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
 * A fixed registration address must be in tls-san: joining servers and agents check the
 * servers' certificate for it. Each server's own addresses need no entry (RKE2 adds them).
 */
export function checkRegistrationAddress(
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
 * A registration address is a VIP or name in front of the management servers; a downstream
 * node's address is another cluster's machine, and the KVM host's or a reserved address is no
 * server at all. (A management node's own address is refused by checkRegistrationAddress.)
 */
export function checkRegistrationAddressPlacement(
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
