/**
 * Installing RKE2 from its release artifacts, for hosts that cannot reach the internet
 * (`rke2.artifacts`): the operator keeps one release's files in a directory (`path`), or the
 * operator's machine downloads them from an internal HTTPS mirror (`url`) into a cache; the node
 * step copies them to a node that needs RKE2 installed or upgraded, checks each against the
 * release's checksum file there, and runs the release's install.sh with
 * INSTALL_RKE2_ARTIFACT_PATH.
 *
 * Facts, rancher/rke2@v1.35.7+rke2r1:install.sh (stage_local_checksums, stage_local_tarball,
 * stage_local_airgap_tarball, install_airgap_tarball, do_install_tar):
 * - the directory holds sha256sum-<arch>.txt, rke2.<os>-<arch>.tar.gz and, optionally, the images
 *   archive rke2-images.<os>-<arch>.tar.zst (else .tar.gz) and further rke2-images-*.<os>-<arch>*;
 * - install.sh verifies the tarball and the images archive against the checksum file, skips an
 *   images archive the file does not name, and copies the further image archives unverified;
 * - INSTALL_RKE2_VERSION is not read on that path: the release is the tarball's.
 * - without a path, install.sh downloads `${INSTALL_RKE2_ARTIFACT_URL}/<version, + as %2B>/` and
 *   the file name (download_checksums, download_tarball; default prefix
 *   https://github.com/rancher/rke2/releases/download): a mirror is laid out the same way.
 * install.sh itself is not a release asset (rancher/rke2-docs install/airgap.md has it fetched
 * from get.rke2.io beside them), so it has no line in the checksum file: the step checks the node's
 * copy against the operator's.
 */
import * as crypto from "crypto";
import * as fs from "fs";
import * as https from "https";
import * as os from "os";
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

const MIRROR_KEY = "rke2.artifacts.url";
/** How long a mirror may stay silent in the middle of a download. */
const IDLE_TIMEOUT_MS = 60_000;
const MAX_REDIRECTS = 5;

/** Where the files of one release fetched from a mirror are kept on the operator's side. */
export function mirrorCacheDirOf(url: string, version: string): string {
  const root = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  const mirror = crypto.createHash("sha256").update(url).digest("hex").slice(0, 16);
  return path.join(root, "rke2-remediation", "artifacts", mirror, version);
}

/** A release file's URL on a mirror laid out as install.sh downloads them. */
export function releaseFileUrl(url: string, version: string, name: string): string {
  return `${url}/${version.replace(/\+/g, "%2B")}/${name}`;
}

/** Errors of a certificate the system's CAs (or caFile) do not vouch for. */
const UNTRUSTED =
  /^(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|CERT_UNTRUSTED)$/;

function fetchFailure(url: string, why: string): Error {
  return new Error(
    `${MIRROR_KEY}: could not fetch ${url}: ${why}; nothing was changed on any host.`,
  );
}

/** Downloads `url` into `file` over HTTPS, following a few redirects to https:// only. */
function download(url: string, file: string, ca: Buffer | undefined, hops = 0): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = https.get(url, { ...(ca ? { ca } : {}), timeout: IDLE_TIMEOUT_MS }, (res) => {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (status >= 300 && status < 400 && location) {
        res.resume();
        const next = new URL(location, url).toString();
        if (!next.startsWith("https://") || hops >= MAX_REDIRECTS)
          return reject(fetchFailure(url, `it redirects to ${next}, which is not followed`));
        return download(next, file, ca, hops + 1).then(resolve, reject);
      }
      if (status !== 200) {
        res.resume();
        return reject(
          fetchFailure(url, `the mirror answered ${status}. Mirror the release's files there`),
        );
      }
      const out = fs.createWriteStream(file, { mode: 0o600 });
      res.pipe(out);
      res.on("error", (e) => reject(fetchFailure(url, e.message)));
      out.on("error", (e) => reject(fetchFailure(url, e.message)));
      out.on("finish", () => resolve());
    });
    request.on("timeout", () =>
      request.destroy(new Error(`no answer for ${IDLE_TIMEOUT_MS / 1000} s`)),
    );
    request.on("error", (e: NodeJS.ErrnoException) =>
      reject(
        fetchFailure(
          url,
          UNTRUSTED.test(e.code ?? "")
            ? `its certificate is not signed by a CA this machine trusts (${e.code}). Set rke2.artifacts.caFile to the PEM file of the CA that signs it`
            : e.message,
        ),
      ),
    );
  });
}

/** Downloads to `<file>.part` and moves it in place only once it hashes to `sha256`, if given. */
async function fetchInto(
  dir: string,
  name: string,
  url: string,
  ca: Buffer | undefined,
  sha256?: string,
) {
  const part = path.join(dir, `${name}.part`);
  await download(url, part, ca).catch(async (e) => {
    await fs.promises.rm(part, { force: true });
    throw e;
  });
  if (sha256 !== undefined) {
    const actual = await sha256OfFile(part);
    if (actual !== sha256) {
      await fs.promises.rm(part, { force: true });
      throw new Error(
        `${MIRROR_KEY}: ${url} has SHA-256 ${actual}, not ${sha256} as the release's ${CHECKSUM_FILE} ` +
          `says; nothing was changed on any host. Fix the mirror's copy and re-run.`,
      );
    }
  }
  await fs.promises.rename(part, path.join(dir, name));
}

async function fetchRelease(url: string, caFile: string | undefined, version: string, dir: string) {
  const ca = caFile
    ? await fs.promises.readFile(caFile).catch((e: Error) => {
        throw new Error(
          `rke2.artifacts.caFile: cannot read ${caFile} here (${e.message}); nothing was changed on any host.`,
        );
      })
    : undefined;
  await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
  // The checksum file says which archives the release has and what each must hash to; fetched
  // each time, so a cached file is only reused when the release still names it.
  const sumsUrl = releaseFileUrl(url, version, CHECKSUM_FILE);
  await fetchInto(dir, CHECKSUM_FILE, sumsUrl, ca);
  await fetchInto(dir, INSTALL_SCRIPT, `${url}/${INSTALL_SCRIPT}`, ca);
  const sums = parseChecksums(await fs.promises.readFile(path.join(dir, CHECKSUM_FILE), "utf8"));
  const images = IMAGE_ARCHIVES.find((name) => sums.has(name));
  for (const name of [TARBALL, ...(images ? [images] : [])]) {
    const expected = sums.get(name);
    if (expected === undefined)
      throw new Error(
        `${MIRROR_KEY}: ${sumsUrl} has no line for ${name}; nothing was changed on any host. ` +
          `Mirror the release's own checksum file.`,
      );
    const cached = path.join(dir, name);
    if (fs.existsSync(cached) && (await sha256OfFile(cached)) === expected) continue;
    await fetchInto(dir, name, releaseFileUrl(url, version, name), ca, expected);
  }
  return dir;
}

/** One download of a release per mirror and process, shared by the node steps that install it. */
const fetching = new Map<string, Promise<string>>();

/**
 * Fetches one release from a mirror into the cache on the operator's side, as install.sh would
 * (see above), and returns the directory: the checksum file and install.sh (`<url>/install.sh`,
 * where get.rke2.io serves it) each time, the tarball and the images archive the checksum file
 * names unless the cache holds them with that hash. Further image archives are not fetched.
 * A download that fails or does not hash as the checksum file says leaves no file in its place.
 */
export function mirroredRelease(
  source: { readonly url: string; readonly caFile?: string },
  version: string,
  dir = mirrorCacheDirOf(source.url, version),
): Promise<string> {
  const key = `${source.url}\0${version}\0${dir}`;
  let fetched = fetching.get(key);
  if (!fetched) {
    fetched = fetchRelease(source.url, source.caFile, version, dir);
    fetching.set(key, fetched);
    fetched.catch(() => fetching.delete(key));
  }
  return fetched;
}
