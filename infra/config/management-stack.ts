/**
 * Stacks that share one Rancher. The stack that owns Rancher (its management servers and its
 * DNS records) exports what the others need as the stack output `rancher`; a stack of downstream
 * clusters names that stack in `managementStack` and takes Rancher's URL, its CA and its
 * addresses from there instead of repeating them. `pulumi up` and `pulumi preview` read the
 * output through a `pulumi.StackReference` (infra/index.ts); the offline `render` and `verify`
 * read it from a file that `pulumi stack output --json` wrote.
 *
 * What the two stacks would both declare (a downstream cluster, a node) is refused here, in the
 * referencing stack: the output lists the clusters and nodes the management stack declares.
 */
import * as fs from "fs";
import { EnvironmentModel, isIpv4, MANAGEMENT_CLUSTER } from "../../components/model";
import { ConfigReader } from "./reader";

/** The stack config key naming the management stack. */
export const MANAGEMENT_STACK_KEY = "managementStack";
/** The management stack's output that referencing stacks read. */
export const MANAGEMENT_OUTPUT = "rancher";

/** The output `rancher` of a stack that owns Rancher. */
export interface ManagementStackOutputs {
  /** `rancher.url` of the management stack. */
  readonly url: string;
  /** `rancher.caCertificate`, exactly as given (Rancher's --ca-checksum hashes its newline). */
  readonly caCertificate: string | null;
  /** Where Rancher's host name resolves: the management servers, or its DNS records. */
  readonly addresses: readonly string[];
  /** The downstream clusters the management stack declares itself. */
  readonly downstreamClusters: readonly string[];
  /** Every node the management stack declares. */
  readonly nodes: readonly { readonly name: string; readonly ip: string }[];
}

/**
 * The `rancher` output of a stack that names Rancher's URL and references no other stack;
 * undefined otherwise (a referencing stack does not pass another's values on).
 */
export function managementStackOutputs(
  model: EnvironmentModel,
): ManagementStackOutputs | undefined {
  const rancher = model.rancher;
  if (model.managementStack !== undefined || !rancher?.url || !rancher.hostname) return undefined;
  return {
    url: rancher.url,
    caCertificate: rancher.caCertificate ?? null,
    addresses: [...(model.dns.staticHosts[rancher.hostname] ?? [])],
    downstreamClusters: rancher.downstreamClusters.map((c) => c.name),
    nodes: model.nodes.map((n) => ({ name: n.name, ip: n.ip })),
  };
}

/** Raised when an output is not the shape this project's program writes. */
export class ManagementOutputsError extends Error {}

/**
 * Reads the `rancher` output as a StackReference or `pulumi stack output --json` gives it.
 * `source` names where it came from in the error (the stack, or the file).
 */
export function parseManagementStackOutputs(
  value: unknown,
  source: string,
): ManagementStackOutputs {
  const fail = (what: string): never => {
    throw new ManagementOutputsError(
      `${source}: the output "${MANAGEMENT_OUTPUT}" ${what}. It is written by this project's ` +
        "program on the management stack: run `pulumi up` there with this release.",
    );
  };
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return fail("is missing or not a map");
  const o = value as Record<string, unknown>;
  if (typeof o.url !== "string" || !/^https:\/\/[^/@]+\/?$/.test(o.url))
    fail("has no url of the form https://<host>[:port]");
  if (o.caCertificate !== null && typeof o.caCertificate !== "string")
    fail("has a caCertificate that is neither text nor null");
  const strings = (key: string, check: (s: string) => boolean): string[] => {
    const list = o[key];
    if (!Array.isArray(list) || !list.every((s) => typeof s === "string" && check(s)))
      fail(`has no list ${key} of the expected values`);
    return list as string[];
  };
  const nodes = o.nodes;
  if (
    !Array.isArray(nodes) ||
    !nodes.every(
      (n) =>
        typeof n === "object" &&
        n !== null &&
        typeof (n as { name?: unknown }).name === "string" &&
        typeof (n as { ip?: unknown }).ip === "string",
    )
  )
    fail("has no list nodes of {name, ip}");
  return {
    url: o.url as string,
    caCertificate: (o.caCertificate as string | null) ?? null,
    addresses: strings("addresses", isIpv4),
    downstreamClusters: strings("downstreamClusters", (s) => s.length > 0),
    nodes: (nodes as { name: string; ip: string }[]).map(({ name, ip }) => ({ name, ip })),
  };
}

/**
 * The management stack's outputs from a file `pulumi stack output --stack <it> --json` wrote
 * (every output of the stack; `rancher` is read), for the offline commands.
 */
export function managementOutputsFromFile(file: string): ManagementStackOutputs {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    throw new ManagementOutputsError(
      `--management-outputs ${file}: ${(err as Error).message}; write it with ` +
        "`pulumi stack output --stack <management stack> --json > <file>`.",
    );
  }
  const outputs = (typeof doc === "object" && doc !== null ? doc : {}) as Record<string, unknown>;
  return parseManagementStackOutputs(outputs[MANAGEMENT_OUTPUT], `--management-outputs ${file}`);
}

const STACK_NAME = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+){0,2}$/;

/** `managementStack` as the stack gives it; a malformed name is a problem. */
export function readManagementStack(r: ConfigReader, value: unknown): string | undefined {
  const name = r.string(value, MANAGEMENT_STACK_KEY);
  if (name === undefined) return undefined;
  if (!STACK_NAME.test(name)) {
    r.problem(
      MANAGEMENT_STACK_KEY,
      `"${name}" is not a stack name; give it as Pulumi names a stack reference: ` +
        "<organization>/<project>/<stack> (on a self-managed backend the organization is " +
        '"organization"), or <stack> within this project.',
    );
    return undefined;
  }
  return name;
}

/**
 * The stack's values with the management stack's taken in: `rancher.url`,
 * `rancher.caCertificate` and Rancher's addresses as `dns.staticHosts[<host>]`. What the stack
 * repeats, and every cluster or node both stacks declare, is a problem.
 */
export function withManagementOutputs(
  r: ConfigReader,
  values: Readonly<Record<string, unknown>>,
  stack: string,
  outputs: ManagementStackOutputs,
): Record<string, unknown> {
  const from = `the management stack "${stack}" (${r.key(MANAGEMENT_STACK_KEY)})`;
  const isMap = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  const rancher = values.rancher === undefined ? {} : values.rancher;
  if (!isMap(rancher)) return { ...values };
  for (const key of ["url", "caCertificate"] as const) {
    if (rancher[key] !== undefined)
      r.problem(
        `rancher.${key}`,
        `is read from ${from}; remove it from this stack, so that the two cannot differ.`,
      );
  }
  const host = /^https:\/\/([^/:]+)/.exec(outputs.url)?.[1].toLowerCase() ?? "";
  const dns = isMap(values.dns) ? values.dns : values.dns === undefined ? {} : undefined;
  // A malformed value is left as it is, for its reader to report.
  const staticHosts =
    dns === undefined
      ? undefined
      : dns.staticHosts === undefined
        ? {}
        : isMap(dns.staticHosts)
          ? dns.staticHosts
          : undefined;
  if (staticHosts && Object.keys(staticHosts).some((h) => h.toLowerCase() === host))
    r.problem(
      `dns.staticHosts["${host}"]`,
      `Rancher's addresses are read from ${from}; remove this entry.`,
    );
  const libvirt = isMap(values.libvirt) ? values.libvirt : {};
  const records = isMap(libvirt.dnsRecords) ? libvirt.dnsRecords : {};
  if (Object.keys(records).some((h) => h.toLowerCase() === host))
    r.problem(
      `libvirt.dnsRecords["${host}"]`,
      `Rancher's records are kept by ${from}; remove this entry, or two stacks write the same record.`,
    );
  const clusters = Array.isArray(rancher.downstreamClusters) ? rancher.downstreamClusters : [];
  clusters.forEach((c: unknown, i) => {
    const name = isMap(c) ? c.name : undefined;
    if (typeof name === "string" && outputs.downstreamClusters.includes(name))
      r.problem(
        `rancher.downstreamClusters[${i}].name`,
        `cluster "${name}" is declared by ${from} too; a cluster in two stacks is registered ` +
          "and changed by both. Declare it in one of them.",
      );
  });
  const nodes = Array.isArray(values.nodes) ? values.nodes : [];
  nodes.forEach((n: unknown, i) => {
    if (!isMap(n)) return;
    const other = outputs.nodes.find((m) => m.ip === n.ip || m.name === n.name);
    if (other)
      r.problem(
        `nodes[${i}]`,
        `${String(n.name)} (${String(n.ip)}) is the node ${other.name} (${other.ip}) of ${from}; ` +
          "each node is prepared by one stack. Declare it in one of them.",
      );
    if (n.cluster === undefined || n.cluster === MANAGEMENT_CLUSTER)
      r.problem(
        `nodes[${i}].cluster`,
        `${String(n.name)} would be a node of this stack's own management cluster, but ${from} ` +
          "runs Rancher's; a stack that references it declares downstream clusters only. Set the " +
          "node's cluster.",
      );
  });
  const merged: Record<string, unknown> = {
    ...values,
    rancher: {
      ...rancher,
      url: outputs.url,
      ...(outputs.caCertificate !== null ? { caCertificate: outputs.caCertificate } : {}),
    },
  };
  if (dns && staticHosts && outputs.addresses.length > 0)
    merged.dns = { ...dns, staticHosts: { ...staticHosts, [host]: [...outputs.addresses] } };
  return merged;
}
