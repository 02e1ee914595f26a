/**
 * RKE2 settings passed through as they are (`extraConfig` and the like): the reader, which
 * refuses the keys the product manages and the settings that would break the estate (both
 * RKE2's facts, ../../components/rke2-cluster/settings.ts).
 */
import { Rke2PassThrough } from "../../components/model";
import { ConfigReader } from "./reader";
import {
  ARG_LIST_FLAGS_MANAGED,
  argFlag,
  isArgList,
  MANAGED_RKE2_KEYS,
  REFUSED_PASS_THROUGH,
  RKE2_FLAG,
} from "../../components/rke2-cluster/settings";

/**
 * Pass-through RKE2 settings (`rke2.extraConfig`, `rke2.serverConfig`, `rke2.agentConfig`,
 * `nodes[i].extraConfig`, `rancher.downstreamClusters[i].extraConfig`): a map of `rke2 server
 * --help` keys to a scalar or a list of scalars. A key the product manages is refused with the
 * stack key that sets it, and so is a `*-arg` entry for a flag the product renders.
 */
export function readPassThrough(
  r: ConfigReader,
  value: unknown,
  path: string,
): Rke2PassThrough | undefined {
  if (value === undefined) return undefined;
  const o = r.object(value, path);
  if (!o) return undefined;
  const settings: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(o)) {
    const at = `${path}.${key}`;
    if (!RKE2_FLAG.test(key)) {
      r.problem(
        at,
        `"${key}" is not an RKE2 setting name; write it as rke2 server --help spells it, e.g. node-taint.`,
      );
      continue;
    }
    // `name+` appends to RKE2's `name` (k3s-io/k3s@7464a828:pkg/configfilearg/parser.go).
    const name = key.replace(/\+$/, "");
    const manager = MANAGED_RKE2_KEYS[name];
    if (manager !== undefined) {
      r.problem(at, `is a setting the product manages; set it through ${manager} instead.`);
      continue;
    }
    const refused = REFUSED_PASS_THROUGH[name]?.(setting);
    if (refused !== undefined) {
      r.problem(at, `${refused} Remove it from ${path}.`);
      continue;
    }
    const scalar = (v: unknown) => ["string", "number", "boolean"].includes(typeof v);
    if (!scalar(setting) && !(Array.isArray(setting) && setting.every(scalar))) {
      r.problem(at, "must be a string, number, boolean or a list of them, as in config.yaml.");
      continue;
    }
    const managedFlags = ARG_LIST_FLAGS_MANAGED[name] ?? {};
    const taken = isArgList(name)
      ? (Array.isArray(setting) ? setting : [setting]).map(argFlag).filter((f) => f in managedFlags)
      : [];
    if (taken.length > 0) {
      r.problem(
        at,
        `sets ${taken.join(", ")}, which the product renders from ${taken.map((f) => managedFlags[f]).join(", ")}; set it there instead.`,
      );
      continue;
    }
    settings[key] = setting;
  }
  return settings;
}
