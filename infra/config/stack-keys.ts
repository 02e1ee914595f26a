/**
 * The stack config's keys, the shape of each value and its default, declared once. The validator
 * (./validate.ts) reports a key this declaration does not list and reads every value through it
 * (`readSettings`: its type, bounds, allowed words and default), and the JSON Schema editors check
 * stack files with (./json-schema.ts, `npm run schema`) is derived from it, defaults included.
 * What only the validator checks (that an address is IPv4, a name a DNS name, the cross-key rules)
 * stays in the validator, on the values read here.
 *
 * A map of keys describes a map of settings, `[map]` a list of such maps, and a `Setting` a
 * value read whole: a scalar, a list of scalars, or a map keyed by free names (host names). A
 * reader that reads a new key adds it here.
 */
import {
  DEFAULT_CNI,
  DEFAULT_KUBE_PROXY_MODE,
  DEFAULT_UNMANAGED_DEVICES,
  MANAGEMENT_CLUSTER,
  NodeRole,
  SECRET_KEYS,
} from "../../components/model";
import { MANAGEMENT_STACK_KEY } from "./management-stack";
import { ARTIFACTS_JSON, type ArtifactsInput } from "./artifacts";
import { REGISTRIES_JSON } from "./registries";
import { ConfigReader } from "./reader";
import type { JsonSchema } from "./json-schema-fragment";

export type { JsonSchema };

/**
 * A value read whole: the JSON Schema of the values the validator accepts there, and how the
 * validator reads it (`read`: the value when its shape is right, else a problem recorded and the
 * default). A setting with a default gives it in its schema too, so an editor shows it.
 */
export abstract class Setting<T = unknown, I = unknown> {
  /** Only for the type of what a stack may write here (`StackSettings`); never set. */
  declare readonly input?: I;
  constructor(readonly json: JsonSchema) {}
  abstract read(r: ConfigReader, value: unknown, path: string): T;
}

/** A value its section's reader checks (names keyed by host, RKE2 flags, roles). */
class RawSetting<I> extends Setting<unknown, I> {
  read(_r: ConfigReader, value: unknown): unknown {
    return value;
  }
}

/** A non-empty string, trimmed; `fallback` when absent, or when unreadable (the problem recorded). */
export class TextSetting<T extends string | undefined> extends Setting<T, string> {
  constructor(readonly fallback: T) {
    super(fallback === undefined ? TEXT_JSON : { ...TEXT_JSON, default: fallback });
  }
  read(r: ConfigReader, value: unknown, path: string): T {
    return (r.string(value, path) ?? this.fallback) as T;
  }
}

/** true or false. */
export class FlagSetting extends Setting<boolean, boolean> {
  constructor(readonly fallback: boolean) {
    super({ type: "boolean", default: fallback });
  }
  read(r: ConfigReader, value: unknown, path: string): boolean {
    return r.boolean(value, path, this.fallback);
  }
}

/**
 * A list of non-empty strings, each trimmed; `fallback` when absent, or when an item is not one
 * (that item's problem recorded), so the checks a reader makes on the items name each by its own
 * place in the list.
 */
export class TextsSetting<T extends readonly string[] | undefined> extends Setting<
  T,
  readonly string[]
> {
  constructor(readonly fallback: T) {
    const json = { type: "array", items: TEXT_JSON };
    super(fallback === undefined ? json : { ...json, default: fallback });
  }
  read(r: ConfigReader, value: unknown, path: string): T {
    const list = r.stringList(value, path);
    const whole = list && Array.isArray(value) && list.length === value.length ? list : undefined;
    return (whole ?? this.fallback) as T;
  }
}

/** A whole number from `min` to `max`. */
export class WholeSetting extends Setting<number, number> {
  constructor(
    readonly min: number,
    readonly max: number,
    readonly fallback: number,
  ) {
    super({ type: "integer", minimum: min, maximum: max, default: fallback });
  }
  read(r: ConfigReader, value: unknown, path: string): number {
    return r.integer(value, path, this.fallback, this.min, this.max);
  }
}

/** One of a few words. */
export class ChoiceSetting<T extends string> extends Setting<T, T> {
  constructor(
    readonly values: readonly T[],
    readonly fallback: T,
  ) {
    super({ enum: values, default: fallback });
  }
  read(r: ConfigReader, value: unknown, path: string): T {
    return r.oneOf(value, path, this.values, this.fallback);
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
function text(): TextSetting<string | undefined>;
function text(fallback: string): TextSetting<string>;
function text(fallback?: string) {
  return new TextSetting(fallback);
}
const flag = (fallback: boolean) => new FlagSetting(fallback);
function texts(): TextsSetting<readonly string[] | undefined>;
function texts(fallback: readonly string[]): TextsSetting<readonly string[]>;
function texts(fallback?: readonly string[]) {
  return new TextsSetting(fallback);
}
const whole = (min: number, max: number, fallback: number) => new WholeSetting(min, max, fallback);
const choice = <T extends string>(values: readonly T[], fallback: T) =>
  new ChoiceSetting(values, fallback);
/** Host names, each with its list of addresses. */
const addressesByName = () =>
  new RawSetting<Readonly<Record<string, readonly string[]>>>({
    type: "object",
    additionalProperties: { type: "array", items: TEXT_JSON },
  });
/** A list of addresses its reader checks item by item, naming each by its place in the list. */
const addresses = () => new RawSetting<readonly string[]>({ type: "array", items: TEXT_JSON });
/** RKE2 settings passed through as config.yaml has them: a scalar or a list of scalars. */
const RKE2_SCALAR: JsonSchema = { type: ["string", "number", "boolean"] };
type Rke2Scalar = string | number | boolean;
const rke2Settings = () =>
  new RawSetting<Readonly<Record<string, Rke2Scalar | readonly Rke2Scalar[]>>>({
    type: "object",
    additionalProperties: { anyOf: [RKE2_SCALAR, { type: "array", items: RKE2_SCALAR }] },
  });

/** `rke2.registries` as a stack writes it (./registries.ts reads it into RKE2's names). */
interface RegistriesInput {
  readonly mirrors?: Readonly<
    Record<
      string,
      { readonly endpoint: readonly string[]; readonly rewrite?: Record<string, string> }
    >
  >;
  readonly configs?: Readonly<
    Record<
      string,
      {
        readonly tls?: {
          readonly caFile?: string;
          readonly certFile?: string;
          readonly keyFile?: string;
          readonly insecureSkipVerify?: boolean;
        };
      }
    >
  >;
}

export const DOWNSTREAM_ROLES = ["etcd", "controlplane", "worker"] as const;
export const NODE_ROLES = ["server", "agent", ...DOWNSTREAM_ROLES] as const;
const ROLE_JSON: JsonSchema = { enum: NODE_ROLES };

export const SSH_KEYS = {
  host: text(),
  port: whole(1, 65535, 22),
  user: text("root"),
  hostKey: text(),
} satisfies KeyMap;
export const ETCD_SNAPSHOT_KEYS = {
  scheduleCron: text("0 */12 * * *"),
  retention: whole(1, 1000, 5),
} satisfies KeyMap;
export const JOIN_GATE_KEYS = {
  timeoutSeconds: whole(10, 86400, 900),
  pollSeconds: whole(1, 60, 2),
} satisfies KeyMap;
/** `rke2.drain`: cordon and drain a running management node before RKE2 restarts there. */
export const DRAIN_KEYS = {
  enabled: flag(false),
  timeoutSeconds: whole(10, 86400, 300),
  podSelector: text(""),
} satisfies KeyMap;
/** Settings of every cluster, management or downstream. */
export const CLUSTER_KEYS = {
  version: text(),
  cni: choice(["calico", "canal", "cilium", "flannel"] as const, DEFAULT_CNI),
  clusterCidr: text("10.42.0.0/16"),
  serviceCidr: text("10.43.0.0/16"),
  clusterDomain: text("cluster.local"),
  kubeProxyMode: choice(["ipvs", "iptables"] as const, DEFAULT_KUBE_PROXY_MODE),
  tlsSan: texts(),
  privateRegistry: text(),
  etcdSnapshot: ETCD_SNAPSHOT_KEYS,
  nodePortRange: text("30000-32767"),
  joinGate: JOIN_GATE_KEYS,
  extraConfig: rke2Settings(),
} satisfies KeyMap;
/**
 * Settings only the management cluster uses: Rancher installs and joins a downstream cluster's
 * nodes itself and gets its DNS fix as chartValues, so these would do nothing there.
 */
export const MANAGEMENT_ONLY_KEYS = {
  installCommand: text("curl -sfL https://get.rke2.io | sh -"),
  artifacts: new RawSetting<ArtifactsInput>(ARTIFACTS_JSON),
  serverJoin: choice(["sequential", "parallel"] as const, "sequential"),
  drain: DRAIN_KEYS,
  agentsMaxUnavailable: whole(1, 10000, 1),
  dnsDelivery: choice(["serverManifest", "helmChartConfig"] as const, "serverManifest"),
  registrationAddress: text(),
  registries: new RawSetting<RegistriesInput>(REGISTRIES_JSON),
  serverConfig: rke2Settings(),
  agentConfig: rke2Settings(),
} satisfies KeyMap;
const MANAGEMENT_CLUSTER_KEYS = {
  ...CLUSTER_KEYS,
  ...MANAGEMENT_ONLY_KEYS,
} satisfies KeyMap;
export const DOWNSTREAM_CLUSTER_KEYS = {
  ...CLUSTER_KEYS,
  name: text(),
  insecureRegistration: flag(false),
} satisfies KeyMap;
export const LIBVIRT_KEYS = {
  ssh: SSH_KEYS,
  network: text("default"),
  subnet: text("192.168.122.0/24"),
  gateway: text(),
  dnsRecords: addressesByName(),
  dhcpDomain: text(),
  removeStaleRecords: flag(false),
} satisfies KeyMap;
/** A node; `ssh.host` defaults to its `ip`. */
export const NODE_KEYS = {
  name: text(),
  ip: text(),
  cluster: text(MANAGEMENT_CLUSTER),
  role: new RawSetting<NodeRole>(ROLE_JSON),
  roles: new RawSetting<readonly NodeRole[]>({ type: "array", items: ROLE_JSON }),
  ssh: SSH_KEYS,
  extraConfig: rke2Settings(),
} satisfies KeyMap;
export const NODE_LOCAL_KEYS = { enabled: flag(false), ip: text("169.254.20.10") } satisfies KeyMap;
export const POLICY_NAMESPACE_KEYS = {
  name: text(),
  isolate: flag(false),
  [OR_NAME]: true,
} satisfies KeyMap;
export const DNS_KEYS = {
  staticHosts: addressesByName(),
  neutralizedSearchDomains: texts(),
  nodeLocal: NODE_LOCAL_KEYS,
  upstreamResolvers: addresses(),
  policyNamespaces: [POLICY_NAMESPACE_KEYS],
} satisfies KeyMap;
export const NODE_PREPARATION_KEYS = {
  unmanagedDevices: texts(DEFAULT_UNMANAGED_DEVICES),
  bringUpKubeIpvs: flag(false),
  firewalld: choice(["disable", "keep"] as const, "disable"),
} satisfies KeyMap;
export const DEPLOY_KEYS = {
  libvirtDnsRecords: flag(true),
  nodePreparation: flag(true),
  rke2Servers: flag(true),
  clusterDns: flag(true),
  rancherClusters: flag(true),
} satisfies KeyMap;

/** The stack config's settings: every key but the secrets. */
export const STACK_SETTINGS_KEYS = {
  libvirt: LIBVIRT_KEYS,
  nodes: [NODE_KEYS],
  rke2: MANAGEMENT_CLUSTER_KEYS,
  rancher: {
    url: text(),
    caCertificate: text(),
    downstreamClusters: [DOWNSTREAM_CLUSTER_KEYS],
  },
  dns: DNS_KEYS,
  nodePreparation: NODE_PREPARATION_KEYS,
  deploy: DEPLOY_KEYS,
  [MANAGEMENT_STACK_KEY]: text(),
} satisfies KeyMap;

export const STACK_CONFIG_KEYS: KeyMap = {
  ...STACK_SETTINGS_KEYS,
  ...Object.fromEntries(SECRET_KEYS.map((key) => [key, text()])),
};

/** What a stack may write at a key of the declaration, as a TypeScript type. */
export type SettingInput<S> =
  S extends Setting<unknown, infer I>
    ? I
    : S extends readonly [infer E]
      ? readonly SettingInput<E>[]
      : S extends KeyMap
        ? S extends { readonly [OR_NAME]: true }
          ? string | SettingsInput<S>
          : SettingsInput<S>
        : never;
/** A map of settings as a stack may write it: every key optional (validation says which are required). */
export type SettingsInput<M> = {
  readonly [K in Exclude<keyof M, typeof OR_NAME>]?: SettingInput<M[K]>;
};
/** The stack config's settings (the secrets aside), as `Rke2Estate` takes them. */
export type StackSettings = SettingsInput<typeof STACK_SETTINGS_KEYS>;

/** The values a map's settings give, by key: its nested maps and lists are read by their own. */
export type SettingValues<M extends KeyMap> = {
  -readonly [K in keyof M as M[K] extends Setting ? K : never]: M[K] extends Setting<infer T>
    ? T
    : never;
};

/**
 * Reads every setting of `map` from `o`, the map at `path` (`""` at the top): each value checked
 * and defaulted as its declaration says, every problem recorded.
 */
export function readSettings<M extends KeyMap>(
  r: ConfigReader,
  map: M,
  o: Record<string, unknown>,
  path: string,
): SettingValues<M> {
  const out: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(map)) {
    if (isSetting(schema)) out[key] = schema.read(r, o[key], path === "" ? key : `${path}.${key}`);
  }
  return out as SettingValues<M>;
}
