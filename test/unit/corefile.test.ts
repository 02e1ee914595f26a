import * as assert from "assert/strict";
import * as YAML from "yaml";
import { ClusterSettings, DnsSettings, EnvironmentModel } from "../../components/model";
import {
  ClusterChartGlobals,
  CorednsChartValues,
  renderChartCorefile,
  renderChartNodeLocalCorefile,
} from "../../components/cluster-dns/chart";
import {
  dnsEgressNetworkPolicyObject,
  helmChartConfigObject,
  renderManifest,
} from "../../components/cluster-dns/manifests";
import {
  clusterDnsChartValues,
  dnsKubeletArgs,
  renderChartValuesYaml,
} from "../../components/cluster-dns/values";
import { estateModel } from "../support/lab-stack";

/** The rke2-coredns chart (1.47.x) Corefile for its default values, as the ConfigMap holds it. */
const CHART_DEFAULT_COREFILE =
  ".:53 {\n    errors\n    health {\n        lameduck 10s\n    }\n    ready\n    kubernetes  cluster.local  in-addr.arpa ip6.arpa {\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n    }\n    prometheus  0.0.0.0:9153\n    forward  . /etc/resolv.conf\n    cache  30\n    loop\n    reload\n    loadbalance\n}";

const UAT1_GLOBALS: ClusterChartGlobals = {
  clusterDnsIp: "10.43.0.10",
  clusterDomain: "cluster.local",
};

interface ServerBlock {
  /** Zones without the port, "." for the root. */
  readonly zones: string[];
  /** The lines between the block's braces, trimmed. */
  readonly body: string[];
}

/** Splits a CoreDNS Corefile into its top-level server blocks. */
function serverBlocks(corefile: string): ServerBlock[] {
  const blocks: ServerBlock[] = [];
  let current: ServerBlock | undefined;
  for (const line of corefile.split("\n")) {
    const header = /^(\S.*) \{$/.exec(line);
    if (!current && header) {
      const zones = header[1].split(/\s+/).map((z) => z.replace(/:\d+$/, ""));
      current = { zones, body: [] };
    } else if (current && line === "}") {
      blocks.push(current);
      current = undefined;
    } else if (current) {
      current.body.push(line.trim());
    }
  }
  assert.equal(current, undefined, "the Corefile has an unclosed server block");
  return blocks;
}

function zoneMatches(name: string, zone: string): boolean {
  return zone === "." || name === zone || name.endsWith(`.${zone}`);
}

/** The block CoreDNS hands a query to: the one whose zone is the longest match of the name. */
function blockAnswering(blocks: readonly ServerBlock[], name: string): ServerBlock {
  let best: { block: ServerBlock; length: number } | undefined;
  for (const block of blocks) {
    for (const zone of block.zones) {
      const length = zone === "." ? 0 : zone.length;
      if (zoneMatches(name, zone) && (!best || length > best.length)) best = { block, length };
    }
  }
  assert.ok(best, `no server block answers ${name}`);
  return best.block;
}

function usesPlugin(block: ServerBlock, plugin: string): boolean {
  return block.body.some((line) => line === plugin || line.startsWith(`${plugin} `));
}

function globalsOf(cluster: ClusterSettings): ClusterChartGlobals {
  return { clusterDnsIp: cluster.clusterDnsIp, clusterDomain: cluster.clusterDomain };
}

function uat1Of(model: EnvironmentModel): ClusterSettings {
  const uat1 = model.rancher?.downstreamClusters.find((c) => c.name === "uat1");
  assert.ok(uat1);
  return uat1;
}

describe("rke2-coredns chart rendering", () => {
  describe("CoreDNS Corefile", () => {
    it("renders the chart's default Corefile for empty values", () => {
      assert.equal(renderChartCorefile({}, UAT1_GLOBALS), CHART_DEFAULT_COREFILE);
    });

    it("renders extraConfig entries in key order before the server blocks", () => {
      const corefile = renderChartCorefile(
        {
          extraConfig: {
            import: { parameters: "/etc/coredns/custom/*.server" },
            debug: { parameters: "" },
          },
        },
        UAT1_GLOBALS,
      );
      assert.deepEqual(corefile.split("\n").slice(0, 3), [
        "debug",
        "import /etc/coredns/custom/*.server",
        ".:53 {",
      ]);
      assert.ok(corefile.endsWith(CHART_DEFAULT_COREFILE));
    });
  });

  describe("node-local-dns Corefile", () => {
    const nodelocal = { enabled: true, ip_address: "169.254.20.10", ipvs: false };

    it("binds the cache to both the link-local and the kube-dns address in iptables mode", () => {
      const corefile = renderChartNodeLocalCorefile(nodelocal, UAT1_GLOBALS);
      assert.ok(corefile.startsWith("cluster.local:53 {\n"), corefile);
      const lines = corefile.split("\n");
      assert.equal(lines.filter((l) => l === "    bind 169.254.20.10 10.43.0.10").length, 4);
      assert.equal(lines.filter((l) => l === "    forward . __PILLAR__CLUSTER__DNS__ {").length, 3);
      assert.ok(lines.includes("    forward . __PILLAR__UPSTREAM__SERVERS__"));
    });

    it("binds only the link-local address and forwards to the real kube-dns IP in IPVS mode", () => {
      const corefile = renderChartNodeLocalCorefile({ ...nodelocal, ipvs: true }, UAT1_GLOBALS);
      const lines = corefile.split("\n");
      const binds = lines.filter((l) => l.trimStart().startsWith("bind "));
      assert.deepEqual(binds, Array(4).fill("    bind 169.254.20.10 "));
      assert.equal(lines.filter((l) => l === "    forward . 10.43.0.10 {").length, 3);
      assert.ok(!corefile.includes("__PILLAR__CLUSTER__DNS__"));
    });

    it("sends extraClusterDomains to CoreDNS with the cluster domain", () => {
      const corefile = renderChartNodeLocalCorefile(
        { ...nodelocal, extraClusterDomains: ["local", "ai-ear.cn"] },
        UAT1_GLOBALS,
      );
      assert.equal(corefile.split("\n")[0], "cluster.local:53 local:53 ai-ear.cn:53 {");
    });
  });
});

describe("cluster DNS fix for the lab stack (seed 000)", () => {
  const model = estateModel();
  const values = clusterDnsChartValues(model.dns, model.management);
  const blocks = serverBlocks(renderChartCorefile(values, globalsOf(model.management)));

  it("makes names under the neutralised `local` domain fail fast with NXDOMAIN", () => {
    const block = blockAnswering(blocks, "ai-ear.cn.local");
    assert.deepEqual(block.zones, ["local"]);
    assert.ok(block.body.includes("template  ANY ANY local {"), block.body.join("\n"));
    assert.ok(block.body.includes("rcode NXDOMAIN"));
    assert.ok(!usesPlugin(block, "forward"), "the local block must not wait on an upstream");
  });

  it("keeps every name under cluster.local answered by the kubernetes plugin", () => {
    for (const name of [
      "cluster.local",
      "kubernetes.default.svc.cluster.local",
      "rancher.cattle-system.svc.cluster.local",
      "10-12-0-5.default.pod.cluster.local",
    ]) {
      const block = blockAnswering(blocks, name);
      assert.deepEqual(block.zones, ["cluster.local"], name);
      assert.ok(usesPlugin(block, "kubernetes"), `${name} is not answered by kubernetes`);
      assert.ok(!usesPlugin(block, "template"), `${name} would be answered NXDOMAIN`);
    }
  });

  it("answers the Rancher hostname from the hosts plugin with all three servers", () => {
    const block = blockAnswering(blocks, "ai-ear.cn");
    assert.deepEqual(block.zones, ["."]);
    const start = block.body.indexOf("hosts  /etc/hosts ai-ear.cn {");
    assert.ok(start >= 0, block.body.join("\n"));
    const entries = block.body.slice(start + 1, block.body.indexOf("}", start));
    for (const ip of ["192.168.122.20", "192.168.122.21", "192.168.122.22"]) {
      assert.ok(entries.includes(`${ip} ai-ear.cn`), `${ip} missing from ${entries.join(", ")}`);
    }
    assert.ok(usesPlugin(block, "forward"), "other names must still reach the upstream");
  });

  it("lists every zone the fix adds in nodelocal.extraClusterDomains", () => {
    assert.ok(values.nodelocal);
    assert.ok(values.nodelocal.extraClusterDomains?.includes("local"));
    assert.ok(values.nodelocal.extraClusterDomains?.includes("ai-ear.cn"));
    const nodeLocalHeader = renderChartNodeLocalCorefile(
      values.nodelocal,
      globalsOf(model.management),
    ).split("\n")[0];
    assert.equal(nodeLocalHeader, "cluster.local:53 local:53 ai-ear.cn:53 {");
  });

  it("points kubelet at the node-local cache when kube-proxy runs in IPVS mode", () => {
    assert.equal(model.management.kubeProxyMode, "ipvs");
    assert.equal(values.nodelocal?.ipvs, true);
    assert.deepEqual(dnsKubeletArgs(model.dns, model.management), ["cluster-dns=169.254.20.10"]);
  });

  it("leaves kubelet's cluster-dns alone when kube-proxy runs in iptables mode", () => {
    const uat1 = uat1Of(model);
    assert.equal(uat1.kubeProxyMode, "iptables");
    assert.equal(clusterDnsChartValues(model.dns, uat1).nodelocal?.ipvs, false);
    assert.deepEqual(dnsKubeletArgs(model.dns, uat1), []);
  });

  it("gives the cluster domain its own block whenever a neutralised domain contains it", () => {
    const cases: { clusterDomain: string; neutralized: string[]; needsOwnBlock: boolean }[] = [
      { clusterDomain: "cluster.local", neutralized: ["local"], needsOwnBlock: true },
      { clusterDomain: "k8s.corp.example", neutralized: ["example"], needsOwnBlock: true },
      {
        clusterDomain: "k8s.corp.example",
        neutralized: ["corp.example", "lan"],
        needsOwnBlock: true,
      },
      { clusterDomain: "cluster.local", neutralized: ["lan"], needsOwnBlock: false },
      { clusterDomain: "cluster.local", neutralized: ["cal"], needsOwnBlock: false },
    ];
    for (const { clusterDomain, neutralized, needsOwnBlock } of cases) {
      const cluster: ClusterSettings = { ...model.management, clusterDomain };
      const dns: DnsSettings = { ...model.dns, neutralizedSearchDomains: neutralized };
      const corefile = renderChartCorefile(clusterDnsChartValues(dns, cluster), globalsOf(cluster));
      const found = serverBlocks(corefile);
      const what = `${clusterDomain} with ${neutralized.join(", ")} neutralised`;
      assert.equal(
        found.some((b) => b.zones.includes(clusterDomain)),
        needsOwnBlock,
        `${what}:\n${corefile}`,
      );
      for (const name of [clusterDomain, `kubernetes.default.svc.${clusterDomain}`]) {
        const block = blockAnswering(found, name);
        assert.ok(usesPlugin(block, "kubernetes"), `${what}: ${name} not answered by kubernetes`);
        assert.ok(!usesPlugin(block, "template"), `${what}: ${name} would be answered NXDOMAIN`);
      }
      for (const domain of neutralized) {
        const block = blockAnswering(found, `ai-ear.cn.${domain}`);
        assert.ok(block.body.includes("rcode NXDOMAIN"), `${what}: ${domain} is not neutralised`);
      }
    }
  });

  it("keeps the chart's defaults when the stack asks for no DNS fix", () => {
    const dns: DnsSettings = {
      ...model.dns,
      staticHosts: {},
      neutralizedSearchDomains: [],
      nodeLocal: { ...model.dns.nodeLocal, enabled: false },
    };
    const cluster = uat1Of(model);
    const plain = clusterDnsChartValues(dns, cluster);
    assert.deepEqual(plain, {});
    assert.equal(renderChartCorefile(plain, globalsOf(cluster)), CHART_DEFAULT_COREFILE);
    assert.deepEqual(dnsKubeletArgs(dns, model.management), []);
  });
});

describe("cluster DNS manifests", () => {
  const model = estateModel();
  const values = clusterDnsChartValues(model.dns, model.management);

  it("embeds values in a HelmChartConfig that targets rke2-coredns in kube-system", () => {
    const manifest = YAML.parse(renderManifest(helmChartConfigObject(values))) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string; namespace: string };
      spec: { valuesContent: string };
    };
    assert.equal(manifest.apiVersion, "helm.cattle.io/v1");
    assert.equal(manifest.kind, "HelmChartConfig");
    assert.deepEqual(manifest.metadata, { name: "rke2-coredns", namespace: "kube-system" });
    assert.equal(manifest.spec.valuesContent, renderChartValuesYaml(values));
    const parsed = YAML.parse(manifest.spec.valuesContent) as CorednsChartValues;
    assert.deepEqual(parsed, JSON.parse(JSON.stringify(values)));
    assert.equal(
      renderChartCorefile(parsed, globalsOf(model.management)),
      renderChartCorefile(values, globalsOf(model.management)),
    );
  });

  interface PolicyShape {
    metadata: { name: string; namespace: string };
    spec: {
      policyTypes: string[];
      egress: {
        to: { ipBlock?: { cidr: string } }[];
        ports: { protocol: string; port: number }[];
      }[];
    };
  }

  function policyFor(dns: DnsSettings): PolicyShape {
    const text = renderManifest(
      dnsEgressNetworkPolicyObject("cattle-system", dns, model.management),
    );
    return YAML.parse(text) as PolicyShape;
  }

  it("allows DNS egress on UDP and TCP 53 to the node-local cache and kube-dns (seed 001)", () => {
    const policy = policyFor(model.dns);
    assert.equal(policy.metadata.namespace, "cattle-system");
    assert.deepEqual(policy.spec.policyTypes, ["Egress"]);
    const [rule] = policy.spec.egress;
    assert.deepEqual(rule.ports.map((p) => `${p.protocol}/${p.port}`).sort(), ["TCP/53", "UDP/53"]);
    const cidrs = rule.to.flatMap((peer) => (peer.ipBlock ? [peer.ipBlock.cidr] : []));
    assert.ok(cidrs.includes("169.254.20.10/32"), cidrs.join(", "));
    assert.ok(cidrs.includes("10.13.0.10/32"), cidrs.join(", "));
  });

  it("leaves the node-local address out of the policy when NodeLocalDNS is off", () => {
    const policy = policyFor({
      ...model.dns,
      nodeLocal: { ...model.dns.nodeLocal, enabled: false },
    });
    const cidrs = policy.spec.egress[0].to.flatMap((peer) =>
      peer.ipBlock ? [peer.ipBlock.cidr] : [],
    );
    assert.ok(!cidrs.includes("169.254.20.10/32"), cidrs.join(", "));
  });
});
