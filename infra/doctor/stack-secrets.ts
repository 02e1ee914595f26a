/**
 * A secret of a stack file read without the Pulumi CLI, its backend or its state: doctor reads
 * the SSH key this way. Only the passphrase secrets provider keeps what decryption needs in the
 * stack file itself (its `encryptionsalt`); a stack on another provider (a cloud KMS, the Pulumi
 * Cloud) is refused with what to pass instead.
 *
 * The format, as pulumi/pulumi@v3.276.0 writes it:
 * - `encryptionsalt: v1:<base64 salt>:v1:<base64 nonce>:<base64 sealed "pulumi">`
 *   (pkg/secrets/passphrase/manager.go NewPassphraseSecretsManager and
 *   symmetricCrypterFromPhraseAndState, which checks the passphrase by opening the sealed word);
 * - the key is PBKDF2-HMAC-SHA256 of the passphrase and salt, 1,000,000 rounds, 32 bytes;
 * - a value is `secure: v1:<base64 nonce>:<base64 ciphertext>`, AES-256-GCM with a 12-byte
 *   nonce and the 16-byte tag after the ciphertext, no additional data
 *   (sdk/go/common/resource/config/crypt.go NewSymmetricCrypterFromPassphrase, DecryptValue);
 * - the passphrase comes from PULUMI_CONFIG_PASSPHRASE, else the file PULUMI_CONFIG_PASSPHRASE_FILE
 *   names (manager.go readPassphrase).
 */
import * as crypto from "crypto";
import * as fs from "fs";
import * as YAML from "yaml";
import { CONFIG_NAMESPACE } from "../config/validate";

const PBKDF2_ROUNDS = 1_000_000;
const TAG_BYTES = 16;

/** The passphrase Pulumi would use, or undefined when neither variable is set. */
export function passphraseFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (env.PULUMI_CONFIG_PASSPHRASE !== undefined) return env.PULUMI_CONFIG_PASSPHRASE;
  const file = env.PULUMI_CONFIG_PASSPHRASE_FILE;
  if (file) return fs.readFileSync(file, "utf8");
  return undefined;
}

function open(key: Buffer, nonceB64: string, sealedB64: string): string {
  const nonce = Buffer.from(nonceB64, "base64");
  const sealed = Buffer.from(sealedB64, "base64");
  if (nonce.length !== 12 || sealed.length < TAG_BYTES) throw new Error("malformed value");
  const decipher = crypto.createDecipheriv("aes-256-gcm", key, nonce);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([
    decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)),
    decipher.final(),
  ]).toString("utf8");
}

/**
 * The plain text of the project's secret `key` in the stack file `file`; undefined when the file
 * does not set it. Errors name the file and the key and say what to do; none holds a secret.
 */
export function stackSecret(
  file: string,
  key: string,
  passphrase: string | undefined,
): string | undefined {
  const doc = (YAML.parse(fs.readFileSync(file, "utf8")) ?? {}) as {
    encryptionsalt?: unknown;
    secretsprovider?: unknown;
    config?: Record<string, unknown>;
  };
  const entry = doc.config?.[`${CONFIG_NAMESPACE}:${key}`];
  if (entry === undefined) return undefined;
  const secure =
    typeof entry === "object" && entry !== null && "secure" in entry
      ? (entry as { secure: unknown }).secure
      : undefined;
  if (typeof secure !== "string")
    throw new Error(
      `${file}: ${CONFIG_NAMESPACE}:${key} is not a secret; set it with pulumi config set --secret.`,
    );
  const salt = typeof doc.encryptionsalt === "string" ? doc.encryptionsalt.split(":") : [];
  if (salt.length !== 5 || salt[0] !== "v1" || salt[2] !== "v1")
    throw new Error(
      `${file} has no passphrase encryptionsalt${doc.secretsprovider ? ` (its secrets provider is ${String(doc.secretsprovider)})` : ""}: ` +
        `only the passphrase provider can be read without Pulumi. Pass the key with --ssh-key <file> instead.`,
    );
  if (passphrase === undefined)
    throw new Error(
      `${file}: ${key} is encrypted with a passphrase; set PULUMI_CONFIG_PASSPHRASE or ` +
        `PULUMI_CONFIG_PASSPHRASE_FILE, or pass the key with --ssh-key <file>.`,
    );
  const derived = crypto.pbkdf2Sync(
    passphrase,
    Buffer.from(salt[1], "base64"),
    PBKDF2_ROUNDS,
    32,
    "sha256",
  );
  try {
    if (open(derived, salt[3], salt[4]) !== "pulumi") throw new Error("wrong check word");
  } catch {
    throw new Error(
      `${file}: the passphrase does not open this stack's secrets; set PULUMI_CONFIG_PASSPHRASE to the stack's passphrase.`,
    );
  }
  const parts = secure.split(":");
  try {
    if (parts.length !== 3 || parts[0] !== "v1") throw new Error("unknown version");
    return open(derived, parts[1], parts[2]);
  } catch {
    throw new Error(
      `${file}: ${CONFIG_NAMESPACE}:${key} cannot be decrypted; set it again with pulumi config set --secret.`,
    );
  }
}
