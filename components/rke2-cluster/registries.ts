/**
 * registries.yaml adopted, not replaced: the stack names the registries it manages, and the file
 * on the host keeps every other entry, its comments and its layout. Pure: the node step reads
 * the file over SSH, this module decides what it must become, rke2-start.sh writes it (keeping
 * the replaced file) in the step that restarts that node behind the join gate, as config.yaml.
 *
 * What RKE2 reads, cited:
 * - The file is `private-registry` (default /etc/rancher/rke2/registries.yaml; the flag has no
 *   environment variable): k3s-io/k3s@eaaf1f84:pkg/cli/cmds/agent.go PrivateRegistryFlag.
 * - It is read once, when the agent's configuration is built at start; a missing file means no
 *   registry configuration, a file that does not load stops the agent's configuration (it logs
 *   "Waiting to retrieve agent configuration" and retries): k3s-io/k3s@001a6d94:
 *   pkg/agent/config/config.go get(), rancher/wharfie@v0.7.1:pkg/registries/registries.go
 *   GetPrivateRegistries (rancher/rke2@v1.35.7+rke2r1 go.mod pins wharfie v0.7.1).
 * - Its shape: `mirrors.<registry>.endpoint` (list) and `.rewrite` (map), `configs.<registry>.auth`
 *   (`username`, `password`, `auth`, `identity_token`) and `.tls` (`ca_file`, `cert_file`,
 *   `key_file`, `insecure_skip_verify`): rancher/wharfie@v0.7.1:pkg/registries/types.go.
 * - An endpoint without a scheme is HTTPS (rancher/wharfie@v0.7.1:pkg/registries/registries.go
 *   normalizeEndpointAddress); a plain-HTTP registry needs `http://`
 *   (rancher/rke2-docs@9477b7b1:docs/install/private_registry.md).
 * - A change takes effect when RKE2 restarts on the node (the same page).
 *
 * Credentials never enter plain state, a log line or a message: state shows each managed entry
 * with its credentials as a marker that says whether the host's are the stack's.
 */
import * as YAML from "yaml";
import type { RegistriesSpec, RegistryAuth } from "../model";

export type { RegistriesSpec, RegistryAuth, RegistryMirror, RegistryTls } from "../model";

/** Where RKE2 reads registries.yaml unless `private-registry` names another file. */
export const RKE2_DEFAULT_REGISTRIES_PATH = "/etc/rancher/rke2/registries.yaml";

/** What the node step carries as its secret `registries` input. */
export interface RegistriesWanted {
  readonly spec: RegistriesSpec;
  readonly auth: Readonly<Record<string, RegistryAuth>>;
}

/** The credential fields RKE2 reads; their values are shown only as these markers. */
export const AUTH_FIELDS = ["username", "password", "auth", "identity_token"] as const;
export const STACK_SECRET = "(secret: the stack's)";
export const OTHER_SECRET = "(secret: not the stack's)";

export interface RegistriesPlan {
  /** The managed entries as the host has them, credentials as markers: the step's state. */
  readonly found: Readonly<Record<string, string>>;
  /** The managed entries as the stack wants them, credentials as markers: the step's input. */
  readonly desired: Readonly<Record<string, string>>;
  /** Entries whose value changes, as `mirrors/<registry>` or `configs/<registry>`. */
  readonly changedEntries: readonly string[];
  /** The file to write when changedEntries is not empty. It holds credentials: a secret. */
  readonly text: string;
}

type Section = "mirrors" | "configs";
const entryKey = (section: Section, registry: string) => `${section}/${registry}`;

/** A value as JSON with sorted keys, so two equal entries compare equal. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (typeof v === "object" && v !== null)
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    return v;
  };
  return JSON.stringify(sort(value ?? null));
}

/** A configs entry with its credentials shown as markers (compared with `auth` when given). */
function maskedConfig(entry: unknown, stackAuth?: RegistryAuth): unknown {
  if (typeof entry !== "object" || entry === null) return entry;
  const { auth, ...rest } = entry as Record<string, unknown>;
  if (typeof auth !== "object" || auth === null) return auth === undefined ? rest : entry;
  const masked = Object.fromEntries(
    Object.entries(auth as Record<string, unknown>).map(([field, value]) => [
      field,
      (AUTH_FIELDS as readonly string[]).includes(field)
        ? stackAuth?.[field as keyof RegistryAuth] === value
          ? STACK_SECRET
          : OTHER_SECRET
        : value,
    ]),
  );
  return { ...rest, auth: masked };
}

/** The entries the stack writes, credentials included, per section and registry. */
function wantedEntries(wanted: RegistriesWanted): Map<string, [Section, string, unknown]> {
  const out = new Map<string, [Section, string, unknown]>();
  for (const [registry, mirror] of Object.entries(wanted.spec.mirrors))
    out.set(entryKey("mirrors", registry), [
      "mirrors",
      registry,
      { endpoint: [...mirror.endpoint], ...(mirror.rewrite ? { rewrite: mirror.rewrite } : {}) },
    ]);
  const configured = new Set([...Object.keys(wanted.spec.configs), ...Object.keys(wanted.auth)]);
  for (const registry of configured) {
    const tls = wanted.spec.configs[registry]?.tls;
    const auth = wanted.auth[registry];
    out.set(entryKey("configs", registry), [
      "configs",
      registry,
      { ...(auth ? { auth: { ...auth } } : {}), ...(tls ? { tls: { ...tls } } : {}) },
    ]);
  }
  return out;
}

/** The managed entries as the stack wants them, credentials as markers (plain). */
export function desiredRegistryEntries(wanted: RegistriesWanted): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, [section, registry, value]] of wantedEntries(wanted))
    out[key] = canonical(
      section === "configs" ? maskedConfig(value, wanted.auth[registry]) : value,
    );
  return out;
}

/**
 * Parses the host's file. One that does not load is an error naming the host and the file and
 * never quoting it (it may hold credentials): RKE2 could not load it either.
 */
function parseRegistriesFile(text: string, host: string, path: string): YAML.Document {
  const doc = YAML.parseDocument(text);
  const problem = doc.errors[0];
  const line = problem?.linePos?.[0]?.line;
  const fail = (why: string) =>
    new Error(
      `cannot read ${path} on ${host}: ${why}. Nothing was changed; RKE2 cannot load it either ` +
        `(its agent waits for its configuration). Fix the file on the host, or move it aside, and re-run.`,
    );
  if (problem) throw fail(`${problem.code}${line ? ` at line ${line}` : ""}`);
  const contents = doc.toJS() as unknown;
  if (contents === null || contents === undefined) return doc;
  if (!YAML.isMap(doc.contents)) throw fail("it is not a map of mirrors and configs");
  for (const section of ["mirrors", "configs"] as const) {
    const value = (contents as Record<string, unknown>)[section];
    if (
      value !== undefined &&
      value !== null &&
      (typeof value !== "object" || Array.isArray(value))
    )
      throw fail(`its ${section} is not a map of registries`);
  }
  return doc;
}

/**
 * What registries.yaml must become on `host`: the found file (undefined when there is none)
 * with each entry the stack manages set to the stack's, every other entry kept.
 */
export function planRegistries(
  wanted: RegistriesWanted,
  foundText: string | undefined,
  host: string,
  path: string,
): RegistriesPlan {
  let doc = foundText === undefined ? undefined : parseRegistriesFile(foundText, host, path);
  // No file, or one with nothing in it: a new map.
  if (doc === undefined || !YAML.isMap(doc.contents)) doc = new YAML.Document({});
  const has = (doc.toJS() ?? {}) as Record<Section, Record<string, unknown> | undefined>;
  const desired = desiredRegistryEntries(wanted);
  const found: Record<string, string> = {};
  const changedEntries: string[] = [];
  for (const [key, [section, registry, value]] of wantedEntries(wanted)) {
    const current = has[section]?.[registry];
    found[key] =
      current === undefined
        ? "(not set)"
        : canonical(section === "configs" ? maskedConfig(current, wanted.auth[registry]) : current);
    // Credentials compare by value: a marker alone would miss one the stack changed.
    if (canonical(current) !== canonical(value)) {
      changedEntries.push(key);
      doc.setIn([section, registry], doc.createNode(value));
    }
  }
  return { found, desired, changedEntries, text: changedEntries.length > 0 ? doc.toString() : "" };
}

/** The file a node's RKE2 reads: the effective `private-registry`, else RKE2's default. */
export function registriesPathOf(setting: unknown, host: string, source?: string): string {
  if (setting === undefined) return RKE2_DEFAULT_REGISTRIES_PATH;
  if (typeof setting !== "string" || !setting.startsWith("/"))
    throw new Error(
      `private-registry in ${source ?? "RKE2's settings"} on ${host} is not an absolute path. ` +
        `Nothing was changed; fix it and re-run.`,
    );
  return setting;
}

/**
 * The secret `registryAuth`: JSON of registry -> credentials, each `username` and `password`,
 * `auth`, or `identity_token` (RKE2's names). A malformed value is an error naming the key and
 * the registry, never a value.
 */
export function parseRegistryAuth(text: string): Record<string, RegistryAuth> {
  const fail = (where: string, why: string) =>
    new Error(
      `registryAuth${where} ${why}. Set it with pulumi config set --secret registryAuth ` +
        `'{"<registry host:port>": {"username": "...", "password": "..."}}'.`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw fail("", "is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw fail("", "is not a map of registries");
  const out: Record<string, RegistryAuth> = {};
  for (const [registry, entry] of Object.entries(parsed)) {
    const where = `["${registry}"]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry))
      throw fail(where, "is not a map of credentials");
    const fields = Object.entries(entry as Record<string, unknown>);
    const unknown = fields.find(([k]) => !(AUTH_FIELDS as readonly string[]).includes(k));
    if (unknown)
      throw fail(where, `has ${unknown[0]}, which RKE2 does not read (${AUTH_FIELDS.join(", ")})`);
    const blank = fields.find(([, v]) => typeof v !== "string" || v === "");
    if (blank) throw fail(`${where}.${blank[0]}`, "is not a non-empty string");
    const auth = entry as RegistryAuth;
    const basic = auth.username !== undefined || auth.password !== undefined;
    if (basic && (auth.username === undefined || auth.password === undefined))
      throw fail(where, "has a username or a password without the other");
    if (!basic && auth.auth === undefined && auth.identity_token === undefined)
      throw fail(where, "has no credentials");
    out[registry] = auth;
  }
  return out;
}
