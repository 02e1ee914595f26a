/**
 * RKE2's configuration as RKE2 itself reads it, each value with where it came from. Pure: the
 * facts script (rke2-facts.sh) returns every file that contributes, this module merges them.
 *
 * The rules, read at the k3s commit rancher/rke2@v1.35.7+rke2r1 pins (go.mod: k3s-io/k3s
 * v1.35.7-0.20260720191031-7464a828f03e; rke2's main.go runs configfilearg.MustParse):
 *   1. `/etc/rancher/rke2/config.yaml`, then every `*.yaml` and `*.yml` file (any case) of
 *      `/etc/rancher/rke2/config.yaml.d/` in byte-wise name order; config.yaml may be absent
 *      (k3s-io/k3s@7464a828:pkg/configfilearg/parser.go, dotDFiles and readConfigFile;
 *      defaultparser.go, DefaultConfig);
 *   2. a key in a later file, or later in the same file, replaces the earlier value whole;
 *   3. `name+` appends to the value so far, both taken as lists (a string is a list of one);
 *      with no value so far it is a plain `name` (parser.go readConfigFile, toSlice);
 *   4. the files' values become command-line flags, so a setting a file makes wins over the
 *      `RKE2_*` variable of the same flag; among the unit's environment files a later one
 *      wins (urfave/cli@v2.27.7 flag_string.go Apply: the variable is only the flag's default;
 *      rancher/rke2@v1.35.7+rke2r1:bundle/lib/systemd/system/rke2-server.service, EnvironmentFile=
 *      /etc/default/%N, /etc/sysconfig/%N, /usr/local/lib/systemd/system/%N.env);
 *   5. `token-file` replaces `token` when set (k3s-io/k3s@7464a828:pkg/cli/server/server.go run,
 *      pkg/cli/agent/agent.go Run; pkg/util/file.go ReadFile trims the file).
 * `RKE2_CONFIG_FILE` would move config.yaml (defaultparser.go EnvName); the product refuses it.
 * A file that cannot be read or parsed is an error naming the host and the file.
 */
import * as YAML from "yaml";

export const RKE2_CONFIG_PATH = "/etc/rancher/rke2/config.yaml";
export const RKE2_DROP_IN_DIR = `${RKE2_CONFIG_PATH}.d`;

/** One configuration file as found on the host, in the order RKE2 reads them. */
export interface ConfigFileText {
  readonly path: string;
  /** The file's text. It may hold the token: never log it. */
  readonly text: string;
}

/** The `RKE2_*` variables of one of the unit's environment files. */
export interface EnvironmentFile {
  readonly path: string;
  /** Variable name to value. They may hold the token: never log them. */
  readonly variables: Readonly<Record<string, string>>;
}

/** A setting as RKE2 has it, and where it came from (a file path, or `RKE2_X in <file>`). */
export interface Setting {
  readonly value: unknown;
  readonly source: string;
}

export type EffectiveConfig = ReadonlyMap<string, Setting>;

/**
 * The settings the product reads that RKE2 also takes from an environment variable, by
 * variable (k3s-io/k3s@7464a828:pkg/cli/cmds/server.go and agent.go, EnvVars
 * `version.ProgramUpper + "_..."`; rancher/rke2@v1.35.7+rke2r1:pkg/cli/cmds/server.go, RKE2_CNI,
 * and root.go, RKE2_CIS_PROFILE). The network settings (cluster-cidr, service-cidr, node-ip,
 * ...) have no variable.
 */
export const RKE2_ENVIRONMENT_FLAGS: Readonly<Record<string, string>> = {
  RKE2_DATA_DIR: "data-dir",
  RKE2_TOKEN: "token",
  RKE2_TOKEN_FILE: "token-file",
  RKE2_AGENT_TOKEN: "agent-token",
  RKE2_AGENT_TOKEN_FILE: "agent-token-file",
  RKE2_URL: "server",
  RKE2_CLUSTER_RESET: "cluster-reset",
  RKE2_KUBECONFIG_OUTPUT: "write-kubeconfig",
  RKE2_KUBECONFIG_MODE: "write-kubeconfig-mode",
  RKE2_SYSTEM_DEFAULT_REGISTRY: "system-default-registry",
  RKE2_NODE_NAME: "node-name",
  RKE2_SELINUX: "selinux",
  RKE2_CNI: "cni",
  RKE2_CIS_PROFILE: "profile",
};

/** The variable that moves config.yaml elsewhere; the product reads only the default path. */
export const RKE2_CONFIG_FILE_VARIABLE = "RKE2_CONFIG_FILE";

/**
 * Parses one file read on `host`. A file that is not a YAML map is an error naming the host,
 * the file and the line; the message never quotes the file, which may hold the token.
 */
export function parseRke2File(text: string, host: string, path: string): YAML.Document {
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

function entries(doc: YAML.Document): [string, unknown][] {
  const map = doc.contents;
  if (!YAML.isMap(map)) return [];
  return map.items.map((pair) => [
    String(YAML.isScalar(pair.key) ? pair.key.value : pair.key),
    YAML.isNode(pair.value) ? pair.value.toJSON() : pair.value,
  ]);
}

const asList = (value: unknown): unknown[] =>
  value === undefined || value === null ? [] : Array.isArray(value) ? value : [value];

/**
 * Merges the files and environment of one node as RKE2 does. `files` are in RKE2's reading
 * order (config.yaml first); `environment` in the unit's order.
 */
export function mergeRke2Config(
  files: readonly ConfigFileText[],
  environment: readonly EnvironmentFile[],
  host: string,
): Map<string, Setting> {
  const merged = new Map<string, Setting>();
  for (const file of files) {
    const doc = parseRke2File(file.text, host, file.path);
    for (const [written, value] of entries(doc)) {
      const key = written.endsWith("+") ? written.slice(0, -1) : written;
      const before = merged.get(key);
      // `key+` appends only to a key set before; on its own it is a plain key.
      merged.set(
        key,
        written.endsWith("+") && before
          ? {
              value: [...asList(before.value), ...asList(value)],
              source: `${before.source} + ${file.path}`,
            }
          : { value, source: file.path },
      );
    }
  }
  // Among the environment files a later one wins; a setting any config file makes wins over all.
  const fromEnvironment = new Map<string, Setting>();
  for (const env of environment) {
    for (const [variable, value] of Object.entries(env.variables)) {
      if (variable === RKE2_CONFIG_FILE_VARIABLE)
        throw new Error(
          `${host}: ${env.path} sets ${RKE2_CONFIG_FILE_VARIABLE}, so RKE2 reads its settings from ` +
            `another file than ${RKE2_CONFIG_PATH}. Nothing was changed; the product manages the ` +
            `default path only: move the settings there and remove the variable.`,
        );
      const key = RKE2_ENVIRONMENT_FLAGS[variable];
      if (key !== undefined)
        fromEnvironment.set(key, { value, source: `${variable} in ${env.path}` });
    }
  }
  for (const [key, setting] of fromEnvironment) if (!merged.has(key)) merged.set(key, setting);
  return merged;
}

/**
 * The values of the `RKE2_*` lines of a systemd environment file: `KEY=value`, with optional
 * single or double quotes; comments and other lines are skipped.
 */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const m = /^(?:export\s+)?(RKE2_[A-Z0-9_]+)=(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2].trim();
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2)
      value = value.slice(1, -1);
    variables[m[1]] = value;
  }
  return variables;
}
