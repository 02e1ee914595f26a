import { ResourceValidationPolicy } from "@pulumi/policy";
import { RKE2_NODE_START } from "../../components/model";

/** The credential fields of registries.yaml (rancher/wharfie@v0.7.1:pkg/registries/types.go). */
const CREDENTIALS = ["username", "password", "auth", "identity_token", "identitytoken"];

/** Whether any map in `value` holds a credential field with a value. */
function holdsCredentials(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsCredentials);
  if (typeof value !== "object" || value === null) return false;
  return Object.entries(value).some(
    ([k, v]) =>
      (CREDENTIALS.includes(k) && typeof v === "string" && v !== "") || holdsCredentials(v),
  );
}

function parsed(text: unknown): unknown {
  try {
    return JSON.parse(String(text ?? ""));
  } catch {
    return undefined;
  }
}

export const rke2RegistryCredentialsKeptSecret: ResourceValidationPolicy = {
  name: "rke2-registry-credentials-kept-secret",
  description:
    "Registry credentials for the nodes' registries.yaml are stored as a Pulumi secret, and only as one.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    // The node step carries the entries it writes, credentials included, as `registries`, and
    // their plain view, credentials as markers, as `managedRegistries`.
    if (args.type !== RKE2_NODE_START.token) return;
    const node = String(args.props.node);
    if (
      holdsCredentials(parsed(args.props.registries)) &&
      !args.opts.additionalSecretOutputs.includes("registries")
    )
      reportViolation(
        `${node}'s registries.yaml entries carry registry credentials but are not a secret: they would ` +
          "sit in plain text in the stack's state. Keep them in the secret registryAuth.",
      );
    const plain = Object.values(
      (args.props.managedRegistries ?? {}) as Record<string, unknown>,
    ).map(parsed);
    if (
      plain.some((entry) =>
        JSON.stringify(entry ?? null).match(
          /"(username|password|auth|identity_token)":"(?!\(secret: )/,
        ),
      )
    )
      reportViolation(
        `${node}'s plain view of registries.yaml (managedRegistries) carries a registry credential: ` +
          "it is written to the stack's state in clear text. Credentials appear there only as markers.",
      );
  },
};
