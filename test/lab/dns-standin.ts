/**
 * Prepares the lab's cluster DNS from what `render` wrote for the stack. With `--kubeconfig`, the
 * CoreDNS `kubernetes` plugin runs for real against a real kube-apiserver (the management
 * cluster's, which exists once RKE2's stand-in runs on the management servers, or the control plane
 * the lab starts for the pods' own cluster): the kubeconfig is added to its block,
 * as a CoreDNS outside the cluster connects (coredns/coredns@v1.14.7 plugin/kubernetes/README.md,
 * `kubeconfig KUBECONFIG [CONTEXT]`). Without it (no apiserver yet), stand-in: the plugin is
 * replaced by a `file` plugin serving a few `*.<cluster domain>` names from a zone file. Every
 * other line of the rendered Corefile is kept.
 *
 *   node bin/test/lab/dns-standin.js --stack local --render <dir> --out <dir> [--mode stack|default]
 *     [--kubeconfig <file>]
 *
 * `--mode default` uses the chart's default Corefile instead: the estate as found, before any fix;
 * `--mode seed` runs seed 000's own HelmChartConfig; `--mode stack-missing-zones` runs the stack's
 * fix behind the node-local cache of chart 1.46.002 (RKE2 v1.35.6), which has no
 * extraClusterDomains.
 * Prints shell assignments (CLUSTER_DNS_IP=...) for the lab script.
 */
import * as fs from "fs";
import * as path from "path";
import {
  CorednsChartValues,
  renderChartCorefile,
  substituteNodeLocalPlaceholders,
} from "../../components/cluster-dns/chart";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import * as YAML from "yaml";
import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/stack-file";
import { ClusterSettings } from "../../components/model";
import { loadEnvironmentModel } from "../../infra/config/validate";
import { parseCommandLine } from "../../infra/cli/args";

/** Address at which the lab's CoreDNS answers on the bridge: the "kube-dns-upstream" service. */
export const COREDNS_UPSTREAM_ADDRESS = "192.168.122.253";

/**
 * Replaces each `kubernetes` plugin (with its block) by a `file` plugin serving a zone file for
 * the cluster domain: authoritative answers for a few services, NXDOMAIN for the rest, as the
 * kubernetes plugin gives.
 */
export function replaceKubernetesPlugin(
  corefile: string,
  clusterDomain: string,
  zoneFile: string,
): string {
  return corefile.replace(
    /^(\s*)kubernetes\b[^\n{]*(\{[^}]*\})?/gm,
    (_m, indent: string) => `${indent}file ${zoneFile} ${clusterDomain}`,
  );
}

/** Adds `kubeconfig FILE` to each `kubernetes` plugin of the Corefile (opening a block if it has none). */
export function withKubeconfig(corefile: string, kubeconfig: string): string {
  return corefile.replace(
    /^(\s*)(kubernetes\b[^\n{]*?)\s*(\{([^}]*)\})?$/gm,
    (_m, indent: string, head: string, _block: string | undefined, body: string | undefined) => {
      const inner = (body ?? "").replace(/^\n|\n\s*$/g, "");
      const lines = [`${indent}${head} {`];
      if (inner) lines.push(inner);
      lines.push(`${indent}    kubeconfig ${kubeconfig}`, `${indent}}`);
      return lines.join("\n");
    },
  );
}

/** Addresses the stand-in serves: kubernetes and kube-dns, as in every cluster, and one app service. */
export function clusterServices(cluster: ClusterSettings): Record<string, string> {
  const base = cluster.serviceCidr.split("/")[0].split(".").slice(0, 2).join(".");
  return {
    "kubernetes.default.svc": `${base}.0.1`,
    "kube-dns.kube-system.svc": cluster.clusterDnsIp,
    "my-svc.default.svc": `${base}.12.34`,
  };
}

export function clusterZoneFile(cluster: ClusterSettings): string {
  const d = cluster.clusterDomain;
  return [
    `$ORIGIN ${d}.`,
    `@ 30 IN SOA ns.dns.${d}. hostmaster.${d}. 1 7200 1800 86400 5`,
    `@ 30 IN NS ns.dns.${d}.`,
    `ns.dns 30 IN A ${cluster.clusterDnsIp}`,
    ...Object.entries(clusterServices(cluster)).map(([name, ip]) => `${name} 5 IN A ${ip}`),
  ].join("\n");
}

/** Seed 000's own HelmChartConfig values (test/fixtures). */
export function seedValues(): CorednsChartValues {
  const file = path.join(
    __dirname,
    "..",
    "..",
    "..",
    "test",
    "fixtures",
    "seed-000-helmchartconfig.yaml",
  );
  const doc = YAML.parse(fs.readFileSync(file, "utf8")) as { spec: { valuesContent: string } };
  return YAML.parse(doc.spec.valuesContent) as CorednsChartValues;
}

interface IndexEntry {
  kind: string;
  path: string;
  cluster?: string;
}

function main(argv: readonly string[]): void {
  const line = parseCommandLine(argv, {
    usage:
      "dns-standin --stack <s> --render <dir> --out <dir> [--mode stack|default] [--kubeconfig <file>]",
    flags: {
      stack: { value: true, help: "the lab stack" },
      render: { value: true, help: "the render output directory" },
      out: { value: true, help: "where the zone and Corefile go" },
      mode: { value: true, help: "stack or default" },
      kubeconfig: { value: true, help: "the apiserver CoreDNS's kubernetes plugin reads" },
    },
  });
  if (line.help) return console.log(line.text);
  const { flags } = line;
  const stack = flags.get("stack") ?? "local";
  const renderDir = flags.get("render");
  const out = flags.get("out");
  const mode = flags.get("mode") ?? "stack";
  if (!renderDir || !out)
    throw new Error(
      "usage: dns-standin --stack <s> --render <dir> --out <dir> [--mode stack|default]",
    );
  const model = loadEnvironmentModel(stack, rawConfigFromStackFile(stackFilePath(stack)), {
    requireSecrets: false,
  });
  // Seed 000 happened in the downstream cluster; the lab's pods live there when there is one.
  const cluster = model.rancher?.downstreamClusters[0] ?? model.management;
  const index = JSON.parse(
    fs.readFileSync(path.join(renderDir, "index.json"), "utf8"),
  ) as IndexEntry[];
  const file = (kind: string) => index.find((e) => e.kind === kind && e.cluster === cluster.name);

  fs.mkdirSync(out, { recursive: true });
  const zoneFile = path.join(out, "cluster.zone");
  fs.writeFileSync(zoneFile, clusterZoneFile(cluster) + "\n");
  const globals = { clusterDnsIp: cluster.clusterDnsIp, clusterDomain: cluster.clusterDomain };
  const rendered =
    mode === "default"
      ? renderChartCorefile({}, globals)
      : mode === "seed"
        ? renderChartCorefile(seedValues(), globals)
        : fs.readFileSync(path.join(renderDir, file("coredns-corefile")!.path), "utf8");
  const kubeconfig = flags.get("kubeconfig");
  fs.writeFileSync(
    path.join(out, "Corefile"),
    (kubeconfig
      ? withKubeconfig(rendered, kubeconfig)
      : replaceKubernetesPlugin(rendered, cluster.clusterDomain, zoneFile)) + "\n",
  );

  const nodeLocal =
    mode === "stack" || mode === "stack-missing-zones" ? file("nodelocal-corefile") : undefined;
  if (nodeLocal) {
    const values = clusterDnsChartValues(model.dns, cluster);
    const rendered = fs.readFileSync(path.join(renderDir, nodeLocal.path), "utf8");
    // stack-missing-zones: the node-local cache as chart 1.46.002 (RKE2 v1.35.6+rke2r1 and
    // earlier on its line) runs it. That chart's cluster-domain block has the zone line
    // `<cluster domain>:53` and nothing else: it has no extraClusterDomains
    // (rancher/rke2-charts@d83185c9 charts/rke2-coredns/rke2-coredns/1.46.002/templates/
    // configmap-nodelocal.yaml; 1.46.201 appends each extra domain as `<domain>:53`). So the fix's
    // zones fall through to the `.:53` block and the node's resolver.
    const chartText =
      mode === "stack-missing-zones" && values.nodelocal
        ? withoutExtraClusterDomains(rendered, cluster.clusterDomain)
        : rendered;
    const text = substituteNodeLocalPlaceholders(chartText, {
      upstreamServers: "/etc/resolv.conf",
      clusterDnsUpstream: COREDNS_UPSTREAM_ADDRESS,
    });
    fs.writeFileSync(path.join(out, "Corefile.nodelocal"), text);
  }
  console.log(`CLUSTER_NAME=${cluster.name}`);
  console.log(`CLUSTER_DNS_IP=${cluster.clusterDnsIp}`);
  console.log(`CLUSTER_DOMAIN=${cluster.clusterDomain}`);
  console.log(`CLUSTER_SERVICE_CIDR=${cluster.serviceCidr}`);
  console.log(`NODELOCAL_ENABLED=${nodeLocal ? "true" : "false"}`);
  console.log(`NODELOCAL_IP=${model.dns.nodeLocal.ip}`);
  console.log(`NODELOCAL_IPVS=${cluster.kubeProxyMode === "ipvs"}`);
}

/** The Corefile with its cluster-domain block's zone line reduced to the cluster domain alone. */
function withoutExtraClusterDomains(corefile: string, clusterDomain: string): string {
  const lines = corefile.split("\n");
  const at = lines.findIndex((l) => l.trim().startsWith(`${clusterDomain}:53`));
  if (at < 0) throw new Error(`no ${clusterDomain}:53 block in the rendered node-local Corefile`);
  const indent = lines[at].slice(0, lines[at].length - lines[at].trimStart().length);
  lines[at] = `${indent}${clusterDomain}:53 {`;
  return lines.join("\n");
}

if (require.main === module) main(process.argv.slice(2));
