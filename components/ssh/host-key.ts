import * as crypto from "crypto";

/** OpenSSH-style fingerprint, "SHA256:<base64 without padding>", of a raw public key blob. */
export function fingerprintOfBlob(blob: Buffer): string {
  return "SHA256:" + crypto.createHash("sha256").update(blob).digest("base64").replace(/=+$/, "");
}

/** The raw key blob of an OpenSSH public key line ("ssh-ed25519 AAAA... [comment]"). */
export function blobOfKeyLine(line: string): Buffer {
  const parts = line.trim().split(/\s+/);
  if (parts.length < 2) throw new Error(`"${line}" is not an OpenSSH public key line`);
  return Buffer.from(parts[1], "base64");
}

export function fingerprintOfKeyLine(line: string): string {
  return fingerprintOfBlob(blobOfKeyLine(line));
}
