/**
 * `rke2.artifacts`: install RKE2 on the management cluster's nodes from one release's artifacts
 * instead of `rke2.installCommand`, taken from a directory on the operator's side (`path`) or
 * downloaded there from an internal HTTPS mirror (`url`, with `caFile` for a private CA)
 * (components/rke2-cluster/artifacts.ts fetches, copies, checks and installs them). Read here
 * for its shape only: the directory and the mirror are read when a node installs, on the machine
 * that runs `pulumi up`, so a pull-request check or a preview elsewhere does not need them.
 */
import type { ArtifactsSource } from "../../components/model/environment";
import type { JsonSchema } from "./json-schema-fragment";
import { ConfigReader } from "./reader";

/** The JSON Schema editors check `rke2.artifacts` with. */
export const ARTIFACTS_JSON: JsonSchema = {
  oneOf: [
    {
      type: "object",
      additionalProperties: false,
      required: ["path"],
      properties: { path: { type: "string", pattern: "^/" } },
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["url"],
      properties: {
        url: { type: "string", pattern: "^https://" },
        caFile: { type: "string", pattern: "^/" },
      },
    },
  ],
};

/** `rke2.artifacts` as a stack writes it: a directory, or a mirror and the CA that signs it. */
export type ArtifactsInput = ArtifactsSource;

const KEYS = ["path", "url", "caFile"];

/** The URL of a mirror, without a trailing slash; a problem text when it cannot be one. */
function mirrorUrlOf(value: unknown): string | { problem: string } {
  const hint =
    "must be the https:// URL under which the mirror keeps each release as GitHub does (<url>/<version>/sha256sum-amd64.txt), with install.sh at <url>/install.sh.";
  if (typeof value !== "string") return { problem: hint };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: hint };
  }
  if (url.protocol !== "https:") return { problem: hint };
  // Credentials in a plain stack key would be in the state and the repository in clear text.
  if (url.username || url.password)
    return {
      problem:
        "has a user name or password in it, which would be kept in clear text; a mirror that needs a login is not supported: serve the artifacts from a path (rke2.artifacts.path) instead.",
    };
  if (url.search || url.hash)
    return { problem: "must not have a query or a fragment; give the mirror's base URL." };
  return value.replace(/\/+$/, "");
}

/**
 * The artifacts setting, or undefined when the stack installs with installCommand. A problem:
 * neither or both of `path` and `url`, a relative path, a mirror URL that is not https:// or
 * carries credentials, a `caFile` without `url`, an unknown key, or installCommand given beside
 * it (one of the two would be ignored without a word).
 */
export function readArtifacts(
  r: ConfigReader,
  value: unknown,
  path: string,
  installCommandGiven: boolean,
): ArtifactsInput | undefined {
  if (value === undefined) return undefined;
  const o = r.object(value, path);
  if (!o) return undefined;
  for (const key of Object.keys(o))
    if (!KEYS.includes(key))
      r.problem(
        `${path}.${key}`,
        "is not a setting of rke2.artifacts; it takes path, or url and caFile.",
      );
  if (installCommandGiven)
    r.problem(
      `${path}`,
      "and rke2.installCommand are both set; a node installs one way. Remove installCommand to install from the artifacts.",
    );
  if (o.path !== undefined && o.url !== undefined) {
    r.problem(
      `${path}`,
      "has both path and url; the artifacts come from one place. Keep one of them.",
    );
    return undefined;
  }
  const absolute = (v: unknown) => typeof v === "string" && v.startsWith("/");
  if (o.url !== undefined) {
    const url = mirrorUrlOf(o.url);
    if (typeof url !== "string") r.problem(`${path}.url`, url.problem);
    if (o.caFile !== undefined && !absolute(o.caFile))
      r.problem(
        `${path}.caFile`,
        "must be the absolute path of a PEM file on the machine that runs pulumi up, holding the CA certificates the mirror's certificate is checked against.",
      );
    if (typeof url !== "string" || (o.caFile !== undefined && !absolute(o.caFile)))
      return undefined;
    return { url, ...(o.caFile !== undefined ? { caFile: String(o.caFile) } : {}) };
  }
  if (o.caFile !== undefined)
    r.problem(`${path}.caFile`, "is the CA of a mirror: it goes with url, not with path.");
  if (!absolute(o.path)) {
    r.problem(
      `${path}.path`,
      "must be the absolute path of a directory on the machine that runs pulumi up, holding one release's install.sh, sha256sum-amd64.txt, rke2.linux-amd64.tar.gz and images archive (or give url, a mirror).",
    );
    return undefined;
  }
  return { path: (o.path as string).replace(/\/+$/, "") || "/" };
}
