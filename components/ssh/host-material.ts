/**
 * The SSH key as configuration, kept out of each resource's state (scripts are kept out the
 * same way: ../assets.ts). A resource records the fingerprint of the key's public half; the
 * provider takes the private key from the stack's `sshPrivateKey`, or from the config key the
 * resource names (`sshKeyConfig`) where the program keeps it under another. Pulumi hands dynamic providers
 * the whole stack configuration, secrets decrypted (pulumi/pulumi@v3.276.0
 * pkg/resource/deploy/target.go `GetPackageConfig`: "For dynamic providers, we always pass the
 * full configuration"), so the key is stored once, in the provider's entry, encrypted.
 */
import { utils as sshUtils } from "ssh2";
import { sha256 } from "../assets";
import { fingerprintOfBlob } from "./host-key";

const fingerprints = new Map<string, string>();

/**
 * The OpenSSH fingerprint (`SHA256:<base64>`) of a private key's public half. Text that does not
 * parse as a private key gets `unparsed:<sha256 prefix>`, so a wrong key still differs from the
 * right one; connecting with it fails with the SSH client's own message.
 */
export function sshKeyFingerprint(privateKey: string): string {
  const known = fingerprints.get(privateKey);
  if (known !== undefined) return known;
  const parsed = sshUtils.parseKey(privateKey);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  const fingerprint =
    key instanceof Error || key === undefined || !key.isPrivateKey()
      ? `unparsed:${sha256(privateKey).slice(0, 16)}`
      : fingerprintOfBlob(key.getPublicSSH());
  fingerprints.set(privateKey, fingerprint);
  return fingerprint;
}

/** How the provider reads the stack's configuration (its `configure` call); unset until then. */
let configValue: (key: string) => string | undefined = () => undefined;

/** The stack configuration key that holds the SSH private key, in the running project. */
export const SSH_KEY_CONFIG = "sshPrivateKey";

/** Records how to read the configuration Pulumi gave the provider. */
export function useStackConfig(get: (key: string) => string | undefined): void {
  configValue = get;
}

/** The fields every host step's state carries for its key; older state holds the key itself. */
export interface HostKeyState {
  readonly sshKeyFingerprint?: string;
  /** The stack config key that holds the key, when it is not `sshPrivateKey`. */
  readonly sshKeyConfig?: string;
  readonly sshPrivateKey?: string;
}

/**
 * The private key a step connects with: the stack config key the step names (`sshPrivateKey`
 * unless the program keeps it under another), when its public half has the fingerprint the step
 * was planned with. State written before fingerprints carries the key.
 */
export function privateKeyFor(state: HostKeyState, owner: string): string {
  if (state.sshKeyFingerprint === undefined && state.sshPrivateKey !== undefined) {
    return state.sshPrivateKey;
  }
  const name = state.sshKeyConfig ?? SSH_KEY_CONFIG;
  const key = configValue(name);
  if (key === undefined || key === "") {
    throw new Error(
      `${owner}: the stack sets no ${name}; set it with ` +
        `\`pulumi config set --secret ${name} < <key file>\`.`,
    );
  }
  const found = sshKeyFingerprint(key);
  if (found !== state.sshKeyFingerprint) {
    throw new Error(
      `${owner}: the stack's ${name} has the fingerprint ${found}, this step was ` +
        `planned with ${state.sshKeyFingerprint}; nothing ran on the host. Run preview again.`,
    );
  }
  return key;
}
