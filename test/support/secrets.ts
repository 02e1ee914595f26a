/** How a test tells a Pulumi secret from a plain value in recorded inputs. */
import * as pulumi from "@pulumi/pulumi";

/**
 * The signature the SDK puts on a serialized secret value (`{ [specialSigKey]: SECRET_SIG,
 * value }`), taken from the SDK itself: pulumi/pulumi@v3.276.0 sdk/nodejs/runtime/rpc.ts
 * (specialSecretSig).
 */
export const SECRET_SIG: string = pulumi.runtime.specialSecretSig;

/** Whether a recorded input value is a serialized Pulumi secret. */
export function isSecret(value: unknown): boolean {
  return typeof value === "object" && value !== null && Object.values(value).includes(SECRET_SIG);
}
