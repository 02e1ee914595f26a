/**
 * The stack config's keys and the shape of each value, declared once. The validator
 * (./validate.ts) reports a key this declaration does not list, takes the bounds of whole numbers
 * and the allowed words of choices from it, and the JSON Schema editors check stack files with
 * (./json-schema.ts, `npm run schema`) is derived from it. What only the validator checks (that
 * an address is IPv4, a name a DNS name, the cross-key rules) stays in the validator.
 *
 * A map of keys describes a map of settings, `[map]` a list of such maps, and a `Setting` a
 * value read whole: a scalar, a list of scalars, or a map keyed by free names (host names). A
 * reader that reads a new key adds it here.
 */
import { SECRET_KEYS } from "../../components/model";
import { MANAGEMENT_STACK_KEY } from "./management-stack";

/** A JSON Schema (draft-07) fragment. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** A value read whole, with the JSON Schema of the values the validator accepts there. */
export class Setting {
  constructor(readonly json: JsonSchema) {}
}

/** A whole number from `min` to `max`. */
export class WholeSetting extends Setting {
  constructor(
    readonly min: number,
    readonly max: number,
  ) {
    super({ type: "integer", minimum: min, maximum: max });
  }
}

/** One of a few words. */
export class ChoiceSetting<T extends string> extends Setting {
  constructor(readonly values: readonly T[]) {
    super({ enum: values });
  }
}

/** Marks a map that may also be written as its name alone (`dns.policyNamespaces` entries). */
export const OR_NAME: unique symbol = Symbol("or name");

export type KeySchema = Setting | readonly [KeySchema] | KeyMap;
export type KeyMap = { readonly [key: string]: KeySchema; readonly [OR_NAME]?: true };

export function isSetting(schema: KeySchema): schema is Setting {
  return schema instanceof Setting;
}

export function isListSchema(schema: KeySchema): schema is readonly [KeySchema] {
  return Array.isArray(schema);
}

/** A non-empty string (one that is not only blanks: the reader trims). */
export const TEXT_JSON: JsonSchema = { type: "string", pattern: "\\S" };
const text = () => new Setting(TEXT_JSON);
const flag = () => new Setting({ type: "boolean" });
const texts = () => new Setting({ type: "array", items: TEXT_JSON });
const whole = (min: number, max: number) => new WholeSetting(min, max);
const choice = <T extends string>(values: readonly T[]) => new ChoiceSetting(values);
/** Host names, each with its list of addresses. */
const addressesByName = () =>
  new Setting({ type: "object", additionalProperties: { type: "array", items: TEXT_JSON } });
/** RKE2 settings passed through as config.yaml has them: a scalar or a list of scalars. */
const RKE2_SCALAR: JsonSchema = { type: ["string", "number", "boolean"] };
const rke2Settings = () =>
  new Setting({
    type: "object",
    additionalProperties: { anyOf: [RKE2_SCALAR, { type: "array", items: RKE2_SCALAR }] },
  });

export const SSH_PORT = whole(1, 65535);
export const SNAPSHOT_RETENTION = whole(1, 1000);
export const JOIN_GATE_TIMEOUT = whole(10, 86400);
export const JOIN_GATE_POLL = whole(1, 60);
export const CNI = choice(["calico", "canal", "cilium", "flannel"] as const);
export const KUBE_PROXY_MODE = choice(["ipvs", "iptables"] as const);
export const SERVER_JOIN = choice(["sequential", "parallel"] as const);
export const DNS_DELIVERY = choice(["serverManifest", "helmChartConfig"] as const);
export const DOWNSTREAM_ROLES = ["etcd", "controlplane", "worker"] as const;
export const NODE_ROLES = ["server", "agent", ...DOWNSTREAM_ROLES] as const;
const ROLE_JSON: JsonSchema = { enum: NODE_ROLES };

const SSH_KEYS: KeyMap = { host: text(), port: SSH_PORT, user: text(), hostKey: text() };
/** Settings of every cluster, management or downstream. */
const CLUSTER_KEYS: KeyMap = {
  version: text(),
  cni: CNI,
  clusterCidr: text(),
  serviceCidr: text(),
  clusterDomain: text(),
  kubeProxyMode: KUBE_PROXY_MODE,
  tlsSan: texts(),
  privateRegistry: text(),
  etcdSnapshot: { scheduleCron: text(), retention: SNAPSHOT_RETENTION },
  nodePortRange: text(),
  joinGate: { timeoutSeconds: JOIN_GATE_TIMEOUT, pollSeconds: JOIN_GATE_POLL },
  extraConfig: rke2Settings(),
};
/**
 * Settings only the management cluster uses: Rancher installs and joins a downstream cluster's
 * nodes itself and gets its DNS fix as chartValues, so these would do nothing there.
 */
const MANAGEMENT_CLUSTER_KEYS: KeyMap = {
  ...CLUSTER_KEYS,
  installCommand: text(),
  serverJoin: SERVER_JOIN,
  dnsDelivery: DNS_DELIVERY,
  registrationAddress: text(),
  serverConfig: rke2Settings(),
  agentConfig: rke2Settings(),
};

export const STACK_CONFIG_KEYS: KeyMap = {
  libvirt: {
    ssh: SSH_KEYS,
    network: text(),
    subnet: text(),
    gateway: text(),
    dnsRecords: addressesByName(),
    dhcpDomain: text(),
  },
  nodes: [
    {
      name: text(),
      ip: text(),
      cluster: text(),
      role: new Setting(ROLE_JSON),
      roles: new Setting({ type: "array", items: ROLE_JSON }),
      ssh: SSH_KEYS,
      extraConfig: rke2Settings(),
    },
  ],
  rke2: MANAGEMENT_CLUSTER_KEYS,
  rancher: {
    url: text(),
    caCertificate: text(),
    downstreamClusters: [{ ...CLUSTER_KEYS, name: text(), insecureRegistration: flag() }],
  },
  dns: {
    staticHosts: addressesByName(),
    neutralizedSearchDomains: texts(),
    nodeLocal: { enabled: flag(), ip: text() },
    upstreamResolvers: texts(),
    policyNamespaces: [{ name: text(), isolate: flag(), [OR_NAME]: true }],
  },
  nodePreparation: { unmanagedDevices: texts(), bringUpKubeIpvs: flag() },
  deploy: {
    libvirtDnsRecords: flag(),
    nodePreparation: flag(),
    rke2Servers: flag(),
    clusterDns: flag(),
    rancherClusters: flag(),
  },
  [MANAGEMENT_STACK_KEY]: text(),
  ...Object.fromEntries(SECRET_KEYS.map((key) => [key, text()])),
};
