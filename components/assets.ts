import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";

/**
 * Reads a file that ships next to a component (a script or template that lands on hosts).
 * Compiled code runs from bin/, the files stay in the source tree; both layouts are looked up.
 */
export function componentFile(dirname: string, name: string): string {
  const beside = path.join(dirname, name);
  if (fs.existsSync(beside)) return fs.readFileSync(beside, "utf8");
  const marker = `${path.sep}bin${path.sep}`;
  const at = dirname.lastIndexOf(marker);
  const source = path.join(
    dirname.slice(0, at) + path.sep + dirname.slice(at + marker.length),
    name,
  );
  return fs.readFileSync(source, "utf8");
}

/*
 * Scripts by reference: a resource records `<path>@sha256:<hex> (<package> <version>)`, not the
 * script's text; the provider reads the file from this package at run time and refuses one whose
 * content no longer has the recorded hash. State written before references holds the text
 * itself; it is still accepted wherever state is read. The policies read scripts through it too.
 */

/** The package root: components/ sits right below it, in the source and in bin/. */
const PACKAGE_ROOT = packageRootOf(__dirname);

function packageRootOf(dirname: string): string {
  const up = path.resolve(dirname, "..");
  return path.basename(up) === "bin" ? path.dirname(up) : up;
}

function packageVersion(): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8"));
  return `${manifest.name} ${manifest.version}`;
}

const SCRIPT_REF = /^([A-Za-z0-9_./-]+\.sh)@sha256:([0-9a-f]{64})(?: \(.*\))?$/;

export function sha256(text: string): string {
  return crypto.createHash("sha256").update(text).digest("hex");
}

/**
 * The reference a resource records for a script shipped beside a component
 * (`scriptRef(__dirname, "prepare-node.sh")`). Compiled code runs from bin/; the scripts stay in
 * the source tree, so the path is taken relative to the package root without bin/.
 */
export function scriptRef(dirname: string, name: string): string {
  const dir = path.relative(PACKAGE_ROOT, dirname).split(path.sep);
  const relative = [...(dir[0] === "bin" ? dir.slice(1) : dir), name].join("/");
  const text = fs.readFileSync(path.join(PACKAGE_ROOT, relative), "utf8");
  return `${relative}@sha256:${sha256(text)} (${packageVersion()})`;
}

/** True for a reference; false for a script's text as state written before references holds it. */
export function isScriptRef(value: string): boolean {
  return SCRIPT_REF.test(value);
}

/** The content hash of a reference or of a script's text: equal hashes, equal scripts. */
export function scriptDigest(value: string): string {
  const ref = SCRIPT_REF.exec(value);
  return ref ? ref[2] : sha256(value);
}

/**
 * The text a reference names, read from this package and checked against the recorded hash; a
 * script's text (older state) is returned as it is. `owner` names the resource in errors.
 */
export function scriptText(value: string, owner: string): string {
  const ref = SCRIPT_REF.exec(value);
  if (!ref) return value;
  const [, relative, digest] = ref;
  let text: string;
  try {
    text = fs.readFileSync(path.join(PACKAGE_ROOT, relative), "utf8");
  } catch (err) {
    throw new Error(
      `${owner}: cannot read the script ${relative} this step recorded (${(err as Error).message}); ` +
        "run from a checkout or package that ships it.",
    );
  }
  if (sha256(text) !== digest) {
    throw new Error(
      `${owner}: ${relative} changed after this run planned it (recorded sha256 ${digest}, ` +
        `found ${sha256(text)}); nothing ran on the host. Re-run preview and up from one checkout.`,
    );
  }
  return text;
}
