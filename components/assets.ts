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
