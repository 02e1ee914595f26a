/**
 * Secrets: the keys that must be Pulumi secrets, and secret-shaped text in plain keys.
 */
import {
  ClusterSettings,
  DeploySelection,
  NodeSpec,
  RancherSettings,
  SECRET_KEYS,
} from "../../components/model";
import { keyIsRead } from "./deploy-parts";
import { ConfigReader } from "./reader";
import { RawStackConfig, ValidationOptions } from "./raw-config";

export function checkSecrets(
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
export function secretShapeOf(text: string): string | undefined {
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
export function checkPlainSecrets(r: ConfigReader, raw: RawStackConfig): void {
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
