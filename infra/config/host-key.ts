/**
 * An OpenSSH public key line ("<type> <base64>") checked inside: the base64 decodes, and the key
 * it holds is of the type the line names, with the fields that type has. A key with one wrong
 * character then fails `verify`, not the first SSH connection. The wire formats:
 *   ssh-ed25519: string "ssh-ed25519", string key (32 bytes)            RFC 8709 section 4
 *   ssh-rsa: string "ssh-rsa", mpint e, mpint n                         RFC 4253 section 6.6
 *   ecdsa-sha2-<curve>: string "ecdsa-sha2-<curve>", string <curve>, string Q
 *                                                                       RFC 5656 section 3.1
 * each string an unsigned 32-bit big-endian length and that many bytes (RFC 4251 section 5).
 */

/** Why LINE ("<type> <base64>", its shape already checked) holds no key of its type, or undefined. */
export function hostKeyProblem(line: string): string | undefined {
  const [type, data] = line.split(" ");
  const bytes = Buffer.from(data, "base64");
  if (bytes.toString("base64").replace(/=+$/, "") !== data.replace(/=+$/, "")) {
    return "its base64 part does not decode (a character is wrong or missing)";
  }
  const fields: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 4 > bytes.length) return "its key data ends inside a field";
    const length = bytes.readUInt32BE(at);
    if (at + 4 + length > bytes.length) return "its key data ends inside a field";
    fields.push(bytes.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  const inner = fields[0]?.toString("latin1");
  if (inner !== type) {
    return `the key inside is ${inner ? `"${inner}"` : "of no type"}, not ${type}`;
  }
  if (type === "ssh-ed25519") {
    if (fields.length !== 2 || fields[1].length !== 32) return "it is not a 32-byte Ed25519 key";
  } else if (type === "ssh-rsa") {
    if (fields.length !== 3 || fields[1].length === 0 || fields[2].length < 64) {
      return "it has no RSA exponent and modulus";
    }
  } else {
    const curve = type.slice("ecdsa-sha2-".length);
    if (fields.length !== 3 || fields[1].toString("latin1") !== curve || fields[2].length === 0) {
      return `it is not an ECDSA key on ${curve}`;
    }
  }
  return undefined;
}
