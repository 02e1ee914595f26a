/**
 * Installing RKE2 from its release artifacts, for hosts that cannot reach the internet
 * (`rke2.artifacts.path`): the operator keeps one release's files in a directory, the node step
 * copies them to a node that needs RKE2 installed or upgraded, checks each against the release's
 * checksum file there, and runs the release's install.sh with INSTALL_RKE2_ARTIFACT_PATH.
 *
 * Facts, rancher/rke2@v1.35.7+rke2r1:install.sh (stage_local_checksums, stage_local_tarball,
 * stage_local_airgap_tarball, install_airgap_tarball, do_install_tar):
 * - the directory holds sha256sum-<arch>.txt, rke2.<os>-<arch>.tar.gz and, optionally, the images
 *   archive rke2-images.<os>-<arch>.tar.zst (else .tar.gz) and further rke2-images-*.<os>-<arch>*;
 * - install.sh verifies the tarball and the images archive against the checksum file, skips an
 *   images archive the file does not name, and copies the further image archives unverified;
 * - INSTALL_RKE2_VERSION is not read on that path: the release is the tarball's.
 * install.sh itself is not a release asset (rancher/rke2-docs install/airgap.md has it fetched
 * from get.rke2.io beside them), so it has no line in the checksum file: the step checks the node's
 * copy against the operator's.
 */
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";

/** The architecture of the hosts this product installs (the lab and the estates are x86_64). */
const ARCH = "amd64";
const SUFFIX = `linux-${ARCH}`;
export const CHECKSUM_FILE = `sha256sum-${ARCH}.txt`;
export const TARBALL = `rke2.${SUFFIX}.tar.gz`;
const IMAGE_ARCHIVES = [`rke2-images.${SUFFIX}.tar.zst`, `rke2-images.${SUFFIX}.tar.gz`];
export const INSTALL_SCRIPT = "install.sh";

/** Where a node step stages one release's artifacts until it has installed them. */
export function stagingDirOf(version: string): string {
  return `/var/lib/rke2-remediation/artifacts/${version}`;
}

/** One file to copy to a node: its name, its path here, and the SHA-256 it must have. */
export interface ArtifactFile {
  readonly name: string;
  readonly local: string;
  readonly sha256: string;
}

/** The lines of a release checksum file, `<sha256>  <name>`: SHA-256 by file name. */
export function parseChecksums(text: string): Map<string, string> {
  const sums = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([0-9a-f]{64})\s+\*?(\S+)\s*$/.exec(line.trim());
    if (m) sums.set(m[2], m[1]);
  }
  return sums;
}

/** SHA-256 of a file here, read once per process for each size and modification time. */
const hashed = new Map<string, string>();
async function sha256OfFile(file: string): Promise<string> {
  const stat = await fs.promises.stat(file);
  const key = `${file}\0${stat.size}\0${stat.mtimeMs}`;
  const known = hashed.get(key);
  if (known) return known;
  const hash = crypto.createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  const sum = hash.digest("hex");
  hashed.set(key, sum);
  return sum;
}

/**
 * The files of one release in `dir` that a node gets, each checked here against the release's
 * checksum file before any is copied. Fails naming `stackKey` and the file: the checksum file or
 * the tarball missing, an archive the checksum file does not name, a file whose SHA-256 differs.
 */
export async function releaseArtifacts(dir: string, stackKey: string): Promise<ArtifactFile[]> {
  const where = (name: string) => path.join(dir, name);
  const stat = await fs.promises.stat(dir).catch(() => undefined);
  if (!stat?.isDirectory())
    throw new Error(
      `${stackKey}: ${dir} is not a directory here; nothing was changed on any host.`,
    );
  const present = new Set(await fs.promises.readdir(dir));
  for (const needed of [CHECKSUM_FILE, TARBALL, INSTALL_SCRIPT])
    if (!present.has(needed))
      throw new Error(
        `${stackKey}: ${dir} has no ${needed}; nothing was changed on any host. Put the release's ` +
          `${needed === INSTALL_SCRIPT ? "install script (get.rke2.io)" : "file"} there and re-run.`,
      );
  const sums = parseChecksums(await fs.promises.readFile(where(CHECKSUM_FILE), "utf8"));
  const images = IMAGE_ARCHIVES.find((name) => present.has(name));
  const extras = [...present]
    .filter((name) => name.startsWith("rke2-images-") && name.includes(`.${SUFFIX}`))
    .sort();
  const files: ArtifactFile[] = [];
  for (const name of [TARBALL, ...(images ? [images] : []), ...extras]) {
    const expected = sums.get(name);
    if (expected === undefined)
      throw new Error(
        `${stackKey}: ${CHECKSUM_FILE} in ${dir} has no line for ${name}, so it cannot be ` +
          `verified; nothing was changed on any host. Use the checksum file of the release the ` +
          `file comes from.`,
      );
    const actual = await sha256OfFile(where(name));
    if (actual !== expected)
      throw new Error(
        `${stackKey}: ${name} in ${dir} has SHA-256 ${actual}, not ${expected} as ${CHECKSUM_FILE} ` +
          `says; nothing was changed on any host. Download it again from the release.`,
      );
    files.push({ name, local: where(name), sha256: expected });
  }
  for (const name of [CHECKSUM_FILE, INSTALL_SCRIPT])
    files.push({ name, local: where(name), sha256: await sha256OfFile(where(name)) });
  return files;
}
