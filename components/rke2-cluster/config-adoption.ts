/**
 * config.yaml adopted, not replaced. The stack renders the keys the product manages; the file a
 * person wrote on the host keeps every other key, its comments and its layout. Pure: the node
 * step reads RKE2's files and the host's facts over SSH, this module decides what config.yaml
 * must become and which managed keys change, rke2-start.sh writes it (keeping the replaced file)
 * only in the step that restarts that server behind its join gate.
 *
 * Every decision uses RKE2's effective configuration (effective-config.ts): config.yaml, its
 * drop-ins, `+` keys, token-file and the unit's environment. A managed key counts as unchanged
 * when that configuration says the same thing, or says nothing and RKE2's default for the
 * node's release is the stack's value (settings.ts).
 *
 * The product keeps writing config.yaml, the file operators of a hand-built estate wrote and
 * read, and never writes a drop-in of its own: one file holds what the product changed, the
 * replaced copy beside it. A managed key that a drop-in sets (RKE2 reads drop-ins after
 * config.yaml) cannot be changed there, so a difference in it is refused, naming the file: the
 * product never reports a node converged while RKE2 runs another value.
 *
 * On a server that holds etcd data, a difference in a key a running cluster cannot change (the
 * CNI, the cluster and service CIDRs, cluster-dns, the cluster domain, data-dir, the address
 * etcd peers on) is refused before anything is written, naming the value found, its source and
 * the stack key that adopts it. The stack's own defaults never override a running cluster.
 *
 * An argument list (`kubelet-arg`, `kube-proxy-arg`, ...) is managed per flag: the stack's
 * entries replace the file's entries for the same flags, and entries for other flags stay.
 *
 * Tokens are compared by SHA-256 and never enter a message, a log line or plain state. A token
 * is `K10<CA hash>::<user>:<password>` or the bare password, and two tokens are the same
 * cluster's when their passwords are: the server authenticates the password alone, under a
 * user name the role fixes, and keys its bootstrap data by it (k3s-io/k3s@7464a828:
 * pkg/clientaccess/token.go parseToken; pkg/util/token.go NormalizeToken; pkg/passwd/passwd.go).
 */
import * as crypto from "crypto";
import * as YAML from "yaml";
import { argFlag, isArgList, MANAGED_RKE2_KEYS } from "./settings";
import {
  ConfigFileText,
  EffectiveConfig,
  EnvironmentFile,
  mergeRke2Config,
  parseRke2File,
  RKE2_CONFIG_PATH,
} from "./effective-config";
import { FIXED_ON_RUNNING_CLUSTER, RKE2_DEFAULT_DATA_DIR, rke2DefaultOf } from "./settings";

export { RKE2_DEFAULT_DATA_DIR } from "./settings";

/** How state and messages show a managed key the file does not set. */
export const ABSENT = "(not set)";

/** A file a `token-file` setting may name, as the facts script read it. */
export interface TokenFileFact {
  readonly path: string;
  /** SHA-256 of the trimmed token and of its password part; absent when it could not be read. */
  readonly sha256?: string;
  readonly passwordSha256?: string;
  /** Why it could not be read: missing | unreadable. */
  readonly error?: string;
}

/** What the node step read on the host for the config decision. */
export interface FoundConfig {
  /** config.yaml's text; undefined when there is none. It holds the token: never log it. */
  readonly text?: string;
  /** The drop-ins of config.yaml.d, in RKE2's reading order. */
  readonly dropIns?: readonly ConfigFileText[];
  /** The `RKE2_*` variables of the unit's environment files. */
  readonly environment?: readonly EnvironmentFile[];
  /** The files `token-file` settings name, as read on the host. */
  readonly tokenFiles?: readonly TokenFileFact[];
  /** The host's name (`uname -n`). */
  readonly hostName: string;
  /** SHA-256 of `<data-dir>/server/token` and of its password part, when the file exists. */
  readonly serverToken?: { readonly sha256: string; readonly passwordSha256: string };
  /** The release whose defaults apply: the installed one, else the stack's. */
  readonly release: string;
  /** A server that holds etcd data: the keys a running cluster cannot change are fixed. */
  readonly holdsEtcdData?: boolean;
  /** The address of the server's own etcd peer URL, when its etcd answered. */
  readonly peerAddress?: string;
}

export interface ConfigPlan {
  /** The managed keys as the host has them in effect (token left out): the step's state. */
  readonly found: Readonly<Record<string, string>>;
  /** Where each found value comes from: a file, `RKE2_X in <file>`, or RKE2's default. */
  readonly sources: Readonly<Record<string, string>>;
  /** The managed keys as the stack wants them (token left out): the step's input. */
  readonly desired: Readonly<Record<string, string>>;
  /** Managed keys whose value changes ("token" when the file must gain the token). */
  readonly changedKeys: readonly string[];
  /** The file to write when changedKeys is not empty: the found file with those keys set. */
  readonly text: string;
  /** The node name RKE2 uses on this host: the configured `node-name`, else the host name. */
  readonly hostNodeName: string;
  /** The effective `data-dir`, or RKE2's default. */
  readonly dataDir: string;
}

export function sha256(text: string): string {
  return crypto.createHash("sha256").update(text).digest("hex");
}

/**
 * A value as RKE2 reads it from YAML: scalars as their text, lists and maps as JSON of those. A
 * list of one item means that item: each item becomes one `--key=item` flag (k3s-io/k3s@7464a828:
 * pkg/configfilearg/parser.go), so `cni: [calico]` and `cni: calico` are the same setting.
 */
export function meaningOf(value: unknown): string {
  if (Array.isArray(value) && value.length === 1 && !Array.isArray(value[0]))
    return meaningOf(value[0]);
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v !== null && typeof v === "object")
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, x]) => [k, canonical(x)]),
      );
    return String(v);
  };
  const c = canonical(value);
  return typeof c === "string" ? c : JSON.stringify(c);
}

function entriesOf(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

/** An argument list's entries for `flags` only, in a stable order, as RKE2 reads them. */
function argEntriesMeaning(value: unknown, flags: ReadonlySet<string>): string {
  return meaningOf(
    entriesOf(value)
      .filter((e) => flags.has(argFlag(e)))
      .map(String)
      .sort(),
  );
}

/** Parses config.yaml read on `host` (see parseRke2File). */
export function parseConfigFile(text: string, host: string, path: string): YAML.Document {
  return parseRke2File(text, host, path);
}

function settingsOf(doc: YAML.Document | undefined): Record<string, unknown> {
  return (doc?.toJS() as Record<string, unknown> | null | undefined) ?? {};
}

/** RKE2's effective configuration on a node, from what the facts script found. */
export function effectiveConfigOf(found: FoundConfig, host: string): EffectiveConfig {
  const files: ConfigFileText[] = [];
  if (found.text !== undefined) files.push({ path: RKE2_CONFIG_PATH, text: found.text });
  files.push(...(found.dropIns ?? []));
  return mergeRke2Config(files, found.environment ?? [], host);
}

/** The effective `data-dir`, or RKE2's default; a value that is not a path is an error. */
export function dataDirOf(effective: EffectiveConfig, host: string): string {
  const setting = effective.get("data-dir");
  if (setting === undefined) return RKE2_DEFAULT_DATA_DIR;
  if (typeof setting.value !== "string" || !setting.value.startsWith("/"))
    throw new Error(
      `data-dir in ${setting.source} on ${host} is not an absolute path. Nothing was changed; fix it and re-run.`,
    );
  return setting.value.replace(/\/+$/, "") || "/";
}

/** The node name RKE2 uses on the host: the configured node-name, else the host name, lowercased. */
export function hostNodeNameOf(effective: EffectiveConfig, hostName: string): string {
  return String(effective.get("node-name")?.value ?? hostName).toLowerCase();
}

/**
 * The password part of a token: `K10<hash>::<user>:<password>` carries it after the user, a
 * bare token is the password (k3s-io/k3s@7464a828:pkg/clientaccess/token.go parseToken).
 */
export function tokenPassword(token: string): string {
  const m = /^K10[^:]*::[^:]*:(.*)$/.exec(token.trim());
  return m ? m[1] : token.trim();
}

/** The host's token as effective: its hashes and where it comes from, or undefined. */
function hostToken(
  effective: EffectiveConfig,
  found: FoundConfig,
  host: string,
): { sha256: string; passwordSha256: string; source: string } | undefined {
  const file = effective.get("token-file");
  if (file !== undefined) {
    const path = String(file.value);
    const read = (found.tokenFiles ?? []).find((t) => t.path === path);
    if (!read || read.sha256 === undefined || read.passwordSha256 === undefined)
      throw new Error(
        `${host}: token-file ${path} (set in ${file.source}) ${read?.error === "missing" ? "does not exist" : "cannot be read"}, ` +
          `so the token RKE2 joins with is unknown. Nothing was changed; fix the file or the setting and re-run.`,
      );
    return { sha256: read.sha256, passwordSha256: read.passwordSha256, source: path };
  }
  const token = effective.get("token");
  if (token === undefined) return undefined;
  const text = String(token.value).trim();
  return {
    sha256: sha256(text),
    passwordSha256: sha256(tokenPassword(text)),
    source: token.source,
  };
}

/**
 * Why the stack's token is not the cluster's, or undefined when nothing on the host says so.
 * Two tokens agree when their passwords do (a bare password matches the full form), and a
 * full stack token must also be the very token when the host holds the full form. Never
 * includes the token.
 */
export function tokenMismatch(
  desiredToken: string,
  found:
    | { readonly sha256: string; readonly passwordSha256: string; readonly source: string }
    | undefined,
  serverToken: FoundConfig["serverToken"],
): string | undefined {
  const want = sha256(desiredToken.trim());
  const wantPassword = sha256(tokenPassword(desiredToken));
  const agrees = (t: { sha256: string; passwordSha256: string }) =>
    t.sha256 === want || t.passwordSha256 === wantPassword;
  if (found && !agrees(found))
    return `the token RKE2 reads there (from ${found.source}) is not the stack's rke2Token`;
  if (serverToken && !agrees(serverToken))
    return "its server/token, the token the running cluster was started with, is not the stack's rke2Token";
  return undefined;
}

/** What to say of a found value: the value and where it comes from. */
function described(value: string, source: string): string {
  return `${value === ABSENT ? "not set" : `"${value}"`} (${source})`;
}

/**
 * Plans config.yaml for one node: `managedText` is the file the stack renders (managed keys
 * only, with the token). Throws, before anything is written, when the stack's token is not the
 * cluster's, when a changed managed key is set by a file read after config.yaml, or when a key
 * a running cluster cannot change differs on a server with etcd data; `host` names the node.
 */
export function planConfig(managedText: string, found: FoundConfig, host: string): ConfigPlan {
  const managed = settingsOf(YAML.parseDocument(managedText));
  const doc =
    found.text === undefined ? undefined : parseConfigFile(found.text, host, RKE2_CONFIG_PATH);
  const fileSettings = settingsOf(doc);
  const effective = effectiveConfigOf(found, host);
  const desiredToken = managed.token;
  const held = hostToken(effective, found, host);
  if (typeof desiredToken === "string") {
    const why = tokenMismatch(desiredToken, held, found.serverToken);
    if (why)
      throw new Error(
        `${host}: ${why}. Nothing was changed. Give the stack the cluster's token: read it on the ` +
          `first server (sudo cat <data-dir>/server/token) and set it with ` +
          `pulumi config set --secret rke2Token. Changing a running cluster's token is not done by config.yaml.`,
      );
  }
  const desired = desiredManagedKeys(managedText);
  const release = found.release;
  const foundView: Record<string, string> = {};
  const sources: Record<string, string> = {};
  const changedKeys: string[] = [];
  for (const key of Object.keys(desired)) {
    const setting = effective.get(key);
    if (isArgList(key)) {
      const flags = new Set(entriesOf(managed[key]).map(argFlag));
      foundView[key] = setting === undefined ? ABSENT : argEntriesMeaning(setting.value, flags);
      sources[key] = setting?.source ?? "no file sets it";
    } else if (setting !== undefined) {
      foundView[key] = meaningOf(setting.value);
      sources[key] = setting.source;
    } else if (key === "node-ip" && found.peerAddress !== undefined) {
      // No file sets it: RKE2 chose the address, and etcd's peer URL shows which.
      foundView[key] = found.peerAddress;
      sources[key] = "no file sets it; the address of its etcd peer URL";
    } else {
      const fallback = rke2DefaultOf(key, release, {
        settings: effective,
        hostName: found.hostName,
      });
      foundView[key] = fallback ?? ABSENT;
      sources[key] =
        fallback === undefined
          ? "no file sets it"
          : `RKE2's default for ${release}: no file sets it`;
    }
    if (foundView[key] !== desired[key]) changedKeys.push(key);
  }

  const refusals: string[] = [];
  for (const key of changedKeys) {
    const source = sources[key];
    const stackKey = MANAGED_RKE2_KEYS[key] ?? key;
    if (found.holdsEtcdData && key in FIXED_ON_RUNNING_CLUSTER) {
      refusals.push(
        `${key} is ${described(foundView[key], source)} and the stack asks for "${desired[key]}", but ` +
          `a running cluster cannot change ${key}` +
          (foundView[key] === ABSENT
            ? `; set ${key} in ${RKE2_CONFIG_PATH} to the value it runs with, or set ${stackKey} to it`
            : `; set ${stackKey} to "${foundView[key]}" to adopt it`),
      );
    } else if (
      effective.has(key) &&
      source.split(" + ").some((s) => s.startsWith(RKE2_CONFIG_PATH + ".d/"))
    ) {
      refusals.push(
        `${key} is ${described(foundView[key], source)}, read after ${RKE2_CONFIG_PATH}, so writing ` +
          `"${desired[key]}" there would change nothing; remove ${key} from that file or set ${stackKey} to its value`,
      );
    }
  }
  if (refusals.length > 0) throw new Error(`${host}: ${refusals.join("; ")}. Nothing was changed.`);

  // The token needs writing only where nothing on the host holds it yet.
  const tokenHeld = held !== undefined || found.serverToken !== undefined;
  if (typeof desiredToken === "string" && !tokenHeld) changedKeys.push("token");

  const hostNodeName = hostNodeNameOf(effective, found.hostName);
  const dataDir = dataDirOf(effective, host);
  let text = found.text ?? managedText;
  if (doc && !YAML.isMap(doc.contents)) text = managedText;
  else if (doc && changedKeys.length > 0) {
    for (const key of changedKeys) {
      if (!isArgList(key)) {
        doc.set(key, managed[key]);
        continue;
      }
      const ours = entriesOf(managed[key]);
      const flags = new Set(ours.map(argFlag));
      doc.set(key, [
        ...entriesOf(fileSettings[key]).filter((e) => !flags.has(argFlag(e))),
        ...ours,
      ]);
    }
    text = doc.toString();
  }
  return {
    found: foundView,
    sources,
    desired,
    changedKeys,
    text,
    hostNodeName,
    dataDir,
  };
}

/** The managed keys the stack renders, token left out, as state and diffs show them. */
/** The stack's rendered keys without the token, for a check that must not hold a secret. */
export function withoutToken(managedText: string): string {
  const doc = YAML.parseDocument(managedText);
  doc.delete("token");
  return doc.toString();
}

export function desiredManagedKeys(managedText: string): Record<string, string> {
  const managed = settingsOf(YAML.parseDocument(managedText));
  return Object.fromEntries(
    Object.entries(managed)
      .filter(([key]) => key !== "token")
      .map(([key, value]) => [
        key,
        isArgList(key)
          ? argEntriesMeaning(value, new Set(entriesOf(value).map(argFlag)))
          : meaningOf(value),
      ]),
  );
}
