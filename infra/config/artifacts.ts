/**
 * `rke2.artifacts`: install RKE2 on the management cluster's nodes from the release artifacts in
 * a directory on the operator's side instead of `rke2.installCommand`
 * (components/rke2-cluster/artifacts.ts copies, checks and installs them). Read here for its
 * shape only: the directory is read when a node installs, on the machine that runs `pulumi up`,
 * so a pull-request check or a preview elsewhere does not need it.
 */
import type { JsonSchema } from "./stack-keys";
import { ConfigReader } from "./reader";

/** The JSON Schema editors check `rke2.artifacts` with. */
export const ARTIFACTS_JSON: JsonSchema = {
  type: "object",
  additionalProperties: false,
  required: ["path"],
  properties: { path: { type: "string", pattern: "^/" } },
};

/** `rke2.artifacts` as a stack writes it. */
export interface ArtifactsInput {
  readonly path: string;
}

/**
 * The artifacts setting, or undefined when the stack installs with installCommand. A problem:
 * no absolute `path`, an unknown key, or installCommand given beside it (one of the two would be
 * ignored without a word).
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
    if (key !== "path")
      r.problem(`${path}.${key}`, "is not a setting of rke2.artifacts; it takes path only.");
  if (installCommandGiven)
    r.problem(
      `${path}`,
      "and rke2.installCommand are both set; a node installs one way. Remove installCommand to install from the artifacts.",
    );
  const dir = o.path;
  if (typeof dir !== "string" || !dir.startsWith("/")) {
    r.problem(
      `${path}.path`,
      "must be the absolute path of a directory on the machine that runs pulumi up, holding one release's install.sh, sha256sum-amd64.txt, rke2.linux-amd64.tar.gz and images archive.",
    );
    return undefined;
  }
  return { path: dir.replace(/\/+$/, "") || "/" };
}
