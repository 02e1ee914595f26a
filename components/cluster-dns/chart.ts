import * as YAML from "yaml";
import { chartReadsKey } from "./known-values";

/**
 * The rke2-coredns values this project sets, and the text the chart renders from them. The
 * rendering follows the chart's templates (templates/configmap.yaml with RKE2's patch for the
 * CoreDNS Corefile, templates/configmap-nodelocal.yaml for the node-local-dns one), so what
 * `render` shows is what lands in the ConfigMaps. Both templates read the same in every chart an
 * RKE2 release in chart-releases.ts ships (1.39.201 to 1.46.201), except that the node-local one
 * reads `nodelocal.extraClusterDomains` only from 1.46.003 on.
 */

export interface CorednsPlugin {
  readonly name: string;
  readonly parameters?: string;
  /** Lines inside the plugin's braces; the chart indents them. */
  readonly configBlock?: string;
}

export interface CorednsZone {
  readonly zone: string;
  readonly use_tcp?: boolean;
}

export interface CorednsServer {
  readonly zones: readonly CorednsZone[];
  readonly port: number;
  readonly plugins: readonly CorednsPlugin[];
}

export interface NodeLocalValues {
  readonly enabled: boolean;
  readonly ip_address: string;
  readonly ipvs: boolean;
  readonly extraClusterDomains?: readonly string[];
}

export interface CorednsChartValues {
  readonly servers?: readonly CorednsServer[];
  readonly extraConfig?: Readonly<Record<string, { readonly parameters: string }>>;
  readonly nodelocal?: NodeLocalValues;
}

/** Values RKE2 itself passes to the chart (HelmChart spec.set), not part of our values. */
export interface ClusterChartGlobals {
  readonly clusterDnsIp: string;
  readonly clusterDomain: string;
}

/**
 * The chart's default `servers` (values.yaml from chart 1.45.205 on; earlier charts also list
 * `cluster.local` in the kubernetes plugin's parameters, which only the no-fix rendering uses).
 */
export const DEFAULT_SERVERS: readonly CorednsServer[] = [
  {
    zones: [{ zone: ".", use_tcp: true }],
    port: 53,
    plugins: [
      { name: "errors" },
      { name: "health", configBlock: "lameduck 10s" },
      { name: "ready" },
      {
        name: "kubernetes",
        parameters: "in-addr.arpa ip6.arpa",
        configBlock: "pods insecure\nfallthrough in-addr.arpa ip6.arpa\nttl 30",
      },
      { name: "prometheus", parameters: "0.0.0.0:9153" },
      { name: "forward", parameters: ". /etc/resolv.conf" },
      { name: "cache", parameters: "30" },
      { name: "loop" },
      { name: "reload" },
      { name: "loadbalance" },
    ],
  },
];

/** Sprig `indent`: prefixes every line, including empty ones. */
function indent(text: string, spaces: number): string {
  const pad = " ".repeat(spaces);
  return text
    .split("\n")
    .map((line) => pad + line)
    .join("\n");
}

/**
 * `data.Corefile` of the CoreDNS ConfigMap: the chart's template output read back as YAML, which
 * is what CoreDNS finally sees (the block scalar removes four spaces from every line, including
 * the continuation lines of pasted `parameters`). Throws when the values break the ConfigMap.
 */
export function renderChartCorefile(
  values: CorednsChartValues,
  globals: ClusterChartGlobals,
): string {
  let doc: unknown;
  try {
    doc = YAML.parse(renderChartConfigMapData(values, globals));
  } catch (err) {
    throw new ChartRenderError(
      `the CoreDNS ConfigMap is not valid YAML: ${(err as Error).message.split("\n")[0]}`,
    );
  }
  const data = (doc as { data?: Record<string, unknown> } | null)?.data;
  if (!data || typeof data.Corefile !== "string" || Object.keys(data).length !== 1) {
    throw new ChartRenderError(
      "the CoreDNS ConfigMap's data holds something other than one Corefile",
    );
  }
  return data.Corefile;
}

/** Values that the chart cannot turn into a valid ConfigMap. */
export class ChartRenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChartRenderError";
  }
}

/**
 * The `data:` section of the CoreDNS ConfigMap as the chart's template writes it. Template lines
 * are indented four spaces; `parameters` are pasted verbatim, so a multi-line value whose
 * continuation lines are indented less than four spaces breaks the ConfigMap's YAML.
 */
export function renderChartConfigMapData(
  values: CorednsChartValues,
  globals: ClusterChartGlobals,
): string {
  const domain = globals.clusterDomain || "cluster.local";
  const out: string[] = ["data:", "  Corefile: |-"];
  for (const name of Object.keys(values.extraConfig ?? {}).sort()) {
    const parameters = values.extraConfig![name].parameters;
    out.push(`    ${name}${parameters ? ` ${parameters}` : ""}`);
  }
  for (const server of values.servers ?? DEFAULT_SERVERS) {
    const zones =
      server.zones.length === 0 ? "." : server.zones.map((z) => z.zone || ".").join(" ");
    out.push(`    ${zones}${server.port ? `:${server.port} ` : ""}{`);
    for (const p of server.plugins) {
      let line = `        ${p.name}`;
      if (p.parameters)
        line += p.name === "kubernetes" ? `  ${domain}  ${p.parameters}` : `  ${p.parameters}`;
      if (p.configBlock) line += ` {\n${indent(p.configBlock, 12)}\n        }`;
      out.push(line);
    }
    out.push("    }");
  }
  return out.join("\n") + "\n";
}

/**
 * `data.Corefile` of the node-local-dns ConfigMap, as chart version `chart` writes it (before the
 * node cache substitutes `__PILLAR__UPSTREAM__SERVERS__` and `__PILLAR__CLUSTER__DNS__` at
 * runtime); without `chart`, as the newest chart does. A chart before 1.46.003 leaves
 * `extraClusterDomains` out: its template has no such value (rancher/rke2-charts@d83185c93194:
 * charts/rke2-coredns/rke2-coredns/1.46.002/templates/configmap-nodelocal.yaml), so those zones
 * fall to the `.:53` block and go to the node's upstream servers.
 */
export function renderChartNodeLocalCorefile(
  nodelocal: NodeLocalValues,
  globals: ClusterChartGlobals,
  chart?: string,
): string {
  const domain = globals.clusterDomain || "cluster.local";
  const honoured =
    chart === undefined || chartReadsKey(chart, "nodelocal.extraClusterDomains")
      ? (nodelocal.extraClusterDomains ?? [])
      : [];
  const upstreamBind = nodelocal.ipvs ? "" : globals.clusterDnsIp;
  const bind = `    bind ${nodelocal.ip_address} ${upstreamBind}`;
  const clusterForward = [
    `    forward . ${nodelocal.ipvs ? globals.clusterDnsIp : "__PILLAR__CLUSTER__DNS__"} {`,
    "            force_tcp",
    "    }",
  ];
  const extra = honoured.map((d) => ` ${d}:53`).join("");
  const block = (header: string, cache: string[], forward: string[], tail: string[]) => [
    header,
    "    errors",
    ...cache,
    "    reload",
    "    loop",
    bind,
    ...forward,
    "    prometheus :9253",
    ...tail,
    "    }",
  ];
  const text = [
    ...block(
      `${domain}:53${extra} {`,
      ["    cache {", "            success 9984 30", "            denial 9984 5", "    }"],
      clusterForward,
      [`    health ${nodelocal.ip_address}:8080`],
    ),
    ...block("in-addr.arpa:53 {", ["    cache 30"], clusterForward, []),
    ...block("ip6.arpa:53 {", ["    cache 30"], clusterForward, []),
    ...block(".:53 {", ["    cache 30"], ["    forward . __PILLAR__UPSTREAM__SERVERS__"], []),
  ];
  return text.join("\n") + "\n";
}

/** What k8s-dns-node-cache does to the chart's Corefile at start (kubernetes/dns configmap.go). */
export function substituteNodeLocalPlaceholders(
  corefile: string,
  substitutions: { readonly upstreamServers: string; readonly clusterDnsUpstream: string },
): string {
  return corefile
    .split("__PILLAR__UPSTREAM__SERVERS__")
    .join(substitutions.upstreamServers)
    .split("__PILLAR__CLUSTER__DNS__")
    .join(substitutions.clusterDnsUpstream);
}
