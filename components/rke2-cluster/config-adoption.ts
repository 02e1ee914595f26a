/**
 * config.yaml adopted, not replaced. The stack renders the keys the product manages; the file a
 * person wrote on the host keeps every other key, its comments and its layout. Pure: the node
 * step reads the file and the host's facts over SSH, this module decides what the file must
 * become and which managed keys change, rke2-start.sh writes it (keeping the replaced file) only
 * in the step that restarts that server behind its join gate.
 *
 * A managed key counts as unchanged when the file already says the same thing, or says nothing
 * and RKE2's default for it is the stack's value:
 *   - `node-name`: RKE2 uses the host name, lowercased (k3s-io/k3s pkg/util/net.go,
 *     GetHostnameAndIPs);
 *   - `cluster-domain`: "cluster.local" (k3s-io/k3s pkg/cli/cmds/server.go, the flag's default);
 *   - `cluster-dns`: the 10th address of the service CIDR (k3s-io/k3s pkg/cli/server/server.go,
 *     "If cluster-dns CLI arg is not set");
 *   - `service-cidr`: 10.43.0.0/16 (k3s-io/k3s pkg/cli/cmds/server.go), for cluster-dns's default;
 *   - `token`: a server's own `<data-dir>/server/token` holds the cluster's token as
 *     `K10<CA hash>::server:<password>`, and either form joins (k3s-io/k3s
 *     pkg/clientaccess/token.go); a first server set up without `token:` has only that file.
 * (k3s-io/k3s at the release-1.35 commit rancher/rke2@v1.35.7+rke2r1 go.mod pins.)
 *
 * An argument list (`kubelet-arg`, `kube-proxy-arg`, ...) is managed per flag: the stack's
 * entries replace the file's entries for the same flags, and entries for other flags stay.
 *
 * The token is compared by SHA-256 and never enters a message, a log line or plain state.
 */
import * as crypto from "crypto";
import * as YAML from "yaml";
import { nthAddress, parseCidr } from "../model";
import { argFlag, isArgList } from "./config";

/** How state and messages show a managed key the file does not set. */
export const ABSENT = "(not set)";

const RKE2_DEFAULT_SERVICE_CIDR = "10.43.0.0/16";
const RKE2_DEFAULT_CLUSTER_DOMAIN = "cluster.local";

/** What the node step read on the host for the config decision. */
export interface FoundConfig {
  /** The file's text; undefined when there is none. It holds the token: never log it. */
  readonly text?: string;
  /** The host's name (`uname -n`). */
  readonly hostName: string;
  /** SHA-256 of `<data-dir>/server/token` and of its password part, when the file exists. */
  readonly serverToken?: { readonly sha256: string; readonly passwordSha256: string };
}

export interface ConfigPlan {
  /** The managed keys as the host has them in effect (token left out): the step's state. */
  readonly found: Readonly<Record<string, string>>;
  /** The managed keys as the stack wants them (token left out): the step's input. */
  readonly desired: Readonly<Record<string, string>>;
  /** Managed keys whose value changes ("token" when the file must gain the token). */
  readonly changedKeys: readonly string[];
  /** The file to write when changedKeys is not empty: the found file with those keys set. */
  readonly text: string;
  /** The node name RKE2 uses on this host: the file's `node-name`, else the host name. */
  readonly hostNodeName: string;
  /** The file's `data-dir`, or RKE2's default. */
  readonly dataDir: string;
}

export const RKE2_DEFAULT_DATA_DIR = "/var/lib/rancher/rke2";

export function sha256(text: string): string {
  return crypto.createHash("sha256").update(text).digest("hex");
}

/** A value as RKE2 reads it from YAML: scalars as their text, lists and maps as JSON of those. */
export function meaningOf(value: unknown): string {
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

/**
 * Parses a config.yaml read on `host`. A file that is not a YAML map is an error naming the host
 * and the line; the message never quotes the file, which holds the token.
 */
export function parseConfigFile(text: string, host: string, path: string): YAML.Document {
  const doc = YAML.parseDocument(text);
  const problem = doc.errors[0];
  if (problem) {
    const line = problem.linePos?.[0]?.line;
    throw new Error(
      `cannot parse ${path} on ${host}${line ? ` (line ${line})` : ""}: ${problem.code}. Nothing was ` +
        `changed; fix the file on the host (rke2 would not start with it either) and re-run.`,
    );
  }
  const contents = doc.toJS() as unknown;
  if (contents !== null && contents !== undefined && !YAML.isMap(doc.contents))
    throw new Error(
      `${path} on ${host} is not a map of RKE2 settings. Nothing was changed; fix the file and re-run.`,
    );
  return doc;
}

function settingsOf(doc: YAML.Document | undefined): Record<string, unknown> {
  return (doc?.toJS() as Record<string, unknown> | null | undefined) ?? {};
}

/** The file's `data-dir`, or RKE2's default; a value that is not a path is an error. */
export function dataDirOf(doc: YAML.Document | undefined, host: string): string {
  const value = settingsOf(doc)["data-dir"];
  if (value === undefined) return RKE2_DEFAULT_DATA_DIR;
  if (typeof value !== "string" || !value.startsWith("/"))
    throw new Error(
      `data-dir in config.yaml on ${host} is not an absolute path. Nothing was changed; fix the file and re-run.`,
    );
  return value.replace(/\/+$/, "");
}

/** The node name RKE2 uses on the host: the file's node-name, else the host name, lowercased. */
export function hostNodeNameOf(doc: YAML.Document | undefined, hostName: string): string {
  const configured = settingsOf(doc)["node-name"];
  return String(configured ?? hostName).toLowerCase();
}

/** What RKE2 takes for a managed key the file does not set, or undefined when it has no rule here. */
function defaultOf(key: string, settings: Record<string, unknown>, hostName: string) {
  switch (key) {
    case "node-name":
      return hostName.toLowerCase();
    case "cluster-domain":
      return RKE2_DEFAULT_CLUSTER_DOMAIN;
    case "cluster-dns": {
      const cidr = parseCidr(String(settings["service-cidr"] ?? RKE2_DEFAULT_SERVICE_CIDR));
      return cidr ? nthAddress(cidr, 10) : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Why the stack's token is not the cluster's, or undefined when nothing on the host says so.
 * Never includes the token.
 */
export function tokenMismatch(
  desiredToken: string,
  foundToken: unknown,
  serverToken: FoundConfig["serverToken"],
): string | undefined {
  const want = sha256(desiredToken.trim());
  if (foundToken !== undefined && sha256(String(foundToken).trim()) !== want)
    return "the token in its config.yaml is not the stack's rke2Token";
  if (serverToken && serverToken.sha256 !== want && serverToken.passwordSha256 !== want)
    return "its server/token, the token the running cluster was started with, is not the stack's rke2Token";
  return undefined;
}

/**
 * Plans config.yaml for one node: `managedText` is the file the stack renders (managed keys
 * only, with the token). Throws when the stack's token is not the cluster's; `host` names the
 * node in messages.
 */
export function planConfig(managedText: string, found: FoundConfig, host: string): ConfigPlan {
  const managed = settingsOf(YAML.parseDocument(managedText));
  const doc =
    found.text === undefined ? undefined : parseConfigFile(found.text, host, "config.yaml");
  const settings = settingsOf(doc);
  const desiredToken = managed.token;
  if (typeof desiredToken === "string") {
    const why = tokenMismatch(desiredToken, settings.token, found.serverToken);
    if (why)
      throw new Error(
        `${host}: ${why}. Nothing was changed. Give the stack the cluster's token: read it on the ` +
          `first server (sudo cat <data-dir>/server/token) and set it with ` +
          `pulumi config set --secret rke2Token. Changing a running cluster's token is not done by config.yaml.`,
      );
  }
  const desired = desiredManagedKeys(managedText);
  const foundView: Record<string, string> = {};
  const changedKeys: string[] = [];
  for (const key of Object.keys(desired)) {
    const present = settings[key];
    if (isArgList(key)) {
      const flags = new Set(entriesOf(managed[key]).map(argFlag));
      foundView[key] = present === undefined ? ABSENT : argEntriesMeaning(present, flags);
    } else {
      const effective = present !== undefined ? present : defaultOf(key, settings, found.hostName);
      foundView[key] = effective === undefined ? ABSENT : meaningOf(effective);
    }
    if (foundView[key] !== desired[key]) changedKeys.push(key);
  }
  // The token needs writing only where nothing on the host holds it yet.
  const tokenHeld = settings.token !== undefined || found.serverToken !== undefined;
  if (typeof desiredToken === "string" && !tokenHeld) changedKeys.push("token");

  const hostNodeName = hostNodeNameOf(doc, found.hostName);
  const dataDir = dataDirOf(doc, host);
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
      doc.set(key, [...entriesOf(settings[key]).filter((e) => !flags.has(argFlag(e))), ...ours]);
    }
    text = doc.toString();
  }
  return {
    found: foundView,
    desired,
    changedKeys,
    text,
    hostNodeName,
    dataDir,
  };
}

/** The managed keys the stack renders, token left out, as state and diffs show them. */
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
