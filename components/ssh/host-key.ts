import * as crypto from "crypto";
import type { ServerHostKeyAlgorithm } from "ssh2";

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

/**
 * The server host key algorithms to offer for a pinned key: only the pinned key's own, so the
 * server presents that key. ssh2 otherwise offers ssh-ed25519 first, a server with several host
 * keys presents its ed25519 key, and a correct pinned RSA or ECDSA key looks like a mismatch.
 * Names and option: ssh2@1.17.0 README.md (`algorithms.serverHostKey`) and
 * lib/protocol/constants.js (DEFAULT_SERVER_HOST_KEY). An RSA key signs with SHA-2 where the
 * server allows it (RFC 8332); plain ssh-rsa (SHA-1) is the last resort.
 */
export function hostKeyAlgorithms(keyLine: string, where: string): ServerHostKeyAlgorithm[] {
  const type = keyLine.trim().split(/\s+/)[0];
  switch (type) {
    case "ssh-ed25519":
    case "ecdsa-sha2-nistp256":
    case "ecdsa-sha2-nistp384":
    case "ecdsa-sha2-nistp521":
      return [type];
    case "ssh-rsa":
      return ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"];
    default:
      throw new Error(
        `the host key pinned for ${where} has type "${type}", which is not supported; pin the ` +
          `host's ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa key (a line of its ` +
          `/etc/ssh/ssh_host_*_key.pub) instead.`,
      );
  }
}
