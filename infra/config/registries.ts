/**
 * `rke2.registries`: the registries.yaml entries the stack manages on the management cluster's
 * nodes (components/rke2-cluster/registries.ts writes them). Written with the stack's camelCase
 * names and read into RKE2's own (rancher/wharfie@v0.7.1:pkg/registries/types.go). Credentials
 * are never read here: they belong in the secret `registryAuth`.
 */
import type { RegistriesSpec, RegistryMirror, RegistryTls } from "../../components/model";
import { isIpv4 } from "../../components/model";
import type { JsonSchema } from "./json-schema-fragment";
import { ConfigReader } from "./reader";

const TLS_KEYS = {
  caFile: "ca_file",
  certFile: "cert_file",
  keyFile: "key_file",
} as const;

/** The JSON Schema editors check `rke2.registries` with. */
export const REGISTRIES_JSON: JsonSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    mirrors: {
      type: "object",
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        required: ["endpoint"],
        properties: {
          endpoint: { type: "array", minItems: 1, items: { type: "string", pattern: "\\S" } },
          rewrite: { type: "object", additionalProperties: { type: "string" } },
        },
      },
    },
    configs: {
      type: "object",
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        properties: {
          tls: {
            type: "object",
            additionalProperties: false,
            properties: {
              caFile: { type: "string", pattern: "^/" },
              certFile: { type: "string", pattern: "^/" },
              keyFile: { type: "string", pattern: "^/" },
              insecureSkipVerify: { type: "boolean" },
            },
          },
        },
      },
    },
  },
};

/** A registry as registries.yaml names it: `*`, or host[:port]. */
function isRegistryName(name: string): boolean {
  if (name === "*") return true;
  const m = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(name);
  if (!m) return false;
  const port = m[2] === undefined ? 443 : Number(m[2]);
  return (
    (isIpv4(m[1]) ||
      /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(
        m[1],
      )) &&
    port >= 1 &&
    port <= 65535
  );
}

/** An endpoint as RKE2 parses it: an optional http:// or https://, a host, an optional path. */
function endpointProblem(endpoint: string): string | undefined {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(endpoint)?.[1];
  if (scheme !== undefined && scheme !== "http" && scheme !== "https")
    return `"${endpoint}" has the scheme ${scheme}; a registry endpoint is http:// or https://.`;
  if (/@/.test(endpoint))
    return "carries credentials in the URL; registry credentials go in the secret registryAuth.";
  try {
    const url = new URL(scheme === undefined ? `https://${endpoint}` : endpoint);
    if (url.hostname === "") return `"${endpoint}" has no host.`;
  } catch {
    return `"${endpoint}" is not a URL.`;
  }
  return undefined;
}

const AUTH_HINT =
  "registry credentials in a plain key are written in clear text to the stack file and Pulumi's " +
  "state. Remove them here and set them in the secret registryAuth: pulumi config set --secret " +
  `registryAuth '{"<registry>": {"username": "...", "password": "..."}}'.`;

function readMirror(r: ConfigReader, value: unknown, path: string): RegistryMirror | undefined {
  const o = r.object(value, path);
  if (!o) return undefined;
  for (const key of Object.keys(o))
    if (key !== "endpoint" && key !== "rewrite")
      r.problem(`${path}.${key}`, "is not a mirror setting (endpoint, rewrite).");
  const list = r.array(o.endpoint, `${path}.endpoint`);
  if (list === undefined || list.length === 0) {
    r.problem(
      `${path}.endpoint`,
      "is missing; list the mirror's endpoints, e.g. [http://192.168.122.156:30000].",
    );
    return undefined;
  }
  const endpoint: string[] = [];
  list.forEach((item, i) => {
    const text = r.string(item, `${path}.endpoint[${i}]`);
    if (text === undefined) return;
    const problem = endpointProblem(text);
    if (problem) r.problem(`${path}.endpoint[${i}]`, problem);
    else endpoint.push(text);
  });
  const rewriteMap = o.rewrite === undefined ? undefined : r.object(o.rewrite, `${path}.rewrite`);
  const rewrite: Record<string, string> = {};
  for (const [pattern, replacement] of Object.entries(rewriteMap ?? {})) {
    try {
      new RegExp(pattern);
    } catch {
      r.problem(`${path}.rewrite["${pattern}"]`, "is not a regular expression.");
      continue;
    }
    const text = r.string(replacement, `${path}.rewrite["${pattern}"]`);
    if (text !== undefined) rewrite[pattern] = text;
  }
  return { endpoint, ...(rewriteMap ? { rewrite } : {}) };
}

function readTls(r: ConfigReader, value: unknown, path: string): RegistryTls | undefined {
  const o = r.object(value, path);
  if (!o) return undefined;
  const tls: Record<string, string | boolean> = {};
  for (const [key, v] of Object.entries(o)) {
    if (key === "insecureSkipVerify") {
      if (typeof v !== "boolean") r.problem(`${path}.${key}`, "must be true or false.");
      else tls.insecure_skip_verify = v;
    } else if (key in TLS_KEYS) {
      const file = r.string(v, `${path}.${key}`);
      if (file !== undefined && !file.startsWith("/"))
        r.problem(`${path}.${key}`, `"${file}" must be an absolute path on the nodes.`);
      else if (file !== undefined) tls[TLS_KEYS[key as keyof typeof TLS_KEYS]] = file;
    } else {
      r.problem(
        `${path}.${key}`,
        "is not a TLS setting (caFile, certFile, keyFile, insecureSkipVerify).",
      );
    }
  }
  if ((tls.cert_file === undefined) !== (tls.key_file === undefined))
    r.problem(
      path,
      "has a client certificate without its key, or a key without its certificate; give certFile and keyFile together.",
    );
  return tls as RegistryTls;
}

/** `<path>` (`rke2.registries`), or undefined when the stack leaves registries.yaml alone. */
export function readRegistries(
  r: ConfigReader,
  value: unknown,
  path: string,
): RegistriesSpec | undefined {
  const o = r.object(value, path);
  if (!o) return undefined;
  const mirrors: Record<string, RegistryMirror> = {};
  const configs: Record<string, { tls?: RegistryTls }> = {};
  for (const key of Object.keys(o))
    if (key !== "mirrors" && key !== "configs")
      r.problem(`${path}.${key}`, "is not a registries.yaml section (mirrors, configs).");
  const section = (name: "mirrors" | "configs") => {
    const map = o[name] === undefined ? {} : (r.object(o[name], `${path}.${name}`) ?? {});
    return Object.entries(map).filter(([registry]) => {
      const ok = isRegistryName(registry);
      if (!ok)
        r.problem(
          `${path}.${name}["${registry}"]`,
          'is not a registry: write host[:port] (e.g. 192.168.122.156:30000), or "*" for every registry.',
        );
      return ok;
    });
  };
  for (const [registry, entry] of section("mirrors")) {
    const mirror = readMirror(r, entry, `${path}.mirrors["${registry}"]`);
    if (mirror) mirrors[registry] = mirror;
  }
  for (const [registry, entry] of section("configs")) {
    const at = `${path}.configs["${registry}"]`;
    const c = r.object(entry, at);
    if (!c) continue;
    for (const key of Object.keys(c)) {
      if (key === "auth") r.problem(`${at}.auth`, AUTH_HINT);
      else if (key !== "tls")
        r.problem(
          `${at}.${key}`,
          "is not a registry setting (tls; credentials go in the secret registryAuth).",
        );
    }
    const tls = c.tls === undefined ? undefined : readTls(r, c.tls, `${at}.tls`);
    configs[registry] = tls ? { tls } : {};
  }
  return { mirrors, configs };
}

/** Mirror endpoints written without a scheme, which RKE2 reaches over HTTPS. */
export function endpointsWithoutScheme(
  spec: RegistriesSpec | undefined,
): { registry: string; index: number; endpoint: string }[] {
  return Object.entries(spec?.mirrors ?? {}).flatMap(([registry, mirror]) =>
    mirror.endpoint.flatMap((endpoint, index) =>
      /^[a-z]+:\/\//i.test(endpoint) ? [] : [{ registry, index, endpoint }],
    ),
  );
}
