import * as assert from "assert/strict";
import { renderChartNodeLocalCorefile } from "../../components/cluster-dns/chart";
import {
  corednsChartOf,
  firstReleaseHonouring,
  knownMinorLines,
  newestReleaseOn,
  releaseHonours,
} from "../../components/cluster-dns/chart-releases";
import { parseCorefile, routeName } from "../../components/cluster-dns/corefile-routing";
import {
  chartReadsKey,
  compareChartVersions,
  unknownValueKeys,
} from "../../components/cluster-dns/known-values";

const KEY = "nodelocal.extraClusterDomains";

describe("RKE2 release -> rke2-coredns chart table", () => {
  it("maps the seeds' v1.35.6+rke2r1 to 1.46.002 and v1.35.7+rke2r1 to 1.46.201", () => {
    assert.equal(corednsChartOf("v1.35.6+rke2r1"), "1.46.002");
    assert.equal(corednsChartOf("v1.35.7+rke2r1"), "1.46.201");
  });

  it("covers the minor lines v1.33 to v1.36", () => {
    assert.deepEqual(knownMinorLines(), ["v1.33", "v1.34", "v1.35", "v1.36"]);
  });

  // The last release before the key and the first with it, on each line.
  const lines: { line: string; before: string; beforeChart: string; first: string }[] = [
    { line: "v1.33", before: "v1.33.13+rke2r1", beforeChart: "1.46.002", first: "v1.33.13+rke2r2" },
    { line: "v1.34", before: "v1.34.9+rke2r1", beforeChart: "1.46.002", first: "v1.34.10+rke2r1" },
    { line: "v1.35", before: "v1.35.6+rke2r1", beforeChart: "1.46.002", first: "v1.35.7+rke2r1" },
    { line: "v1.36", before: "v1.36.2+rke2r1", beforeChart: "1.46.002", first: "v1.36.3+rke2r1" },
  ];
  for (const { line, before, beforeChart, first } of lines) {
    it(`on ${line}: ${before} lacks extraClusterDomains, ${first} is the first with it`, () => {
      assert.equal(corednsChartOf(before), beforeChart);
      assert.equal(releaseHonours(before, KEY), false);
      assert.equal(corednsChartOf(first), "1.46.201");
      assert.equal(releaseHonours(first, KEY), true);
      assert.equal(firstReleaseHonouring(line, KEY), first);
      assert.equal(newestReleaseOn(line), first);
    });
  }

  it("knows no release outside the table", () => {
    assert.equal(corednsChartOf("v1.35.8+rke2r1"), undefined);
    assert.equal(corednsChartOf("v1.32.13+rke2r2"), undefined);
    assert.equal(releaseHonours("v1.35.8+rke2r1", KEY), false);
    assert.equal(firstReleaseHonouring("v1.32", KEY), undefined);
  });
});

describe("values keys per rke2-coredns chart version", () => {
  it("orders chart versions numerically per part", () => {
    assert.ok(compareChartVersions("1.46.002", "1.46.003") < 0);
    assert.ok(compareChartVersions("1.46.201", "1.46.003") > 0);
    assert.ok(compareChartVersions("1.47.000", "1.46.201") > 0);
    assert.equal(compareChartVersions("1.45.212", "1.45.212"), 0);
  });

  it("has extraClusterDomains from chart 1.46.003 on", () => {
    assert.equal(chartReadsKey("1.46.002", KEY), false);
    assert.equal(chartReadsKey("1.46.003", KEY), true);
    assert.equal(chartReadsKey("1.46.201", KEY), true);
  });

  it("has nodelocal.resources from 1.45.204 and podLabels from 1.45.200", () => {
    assert.equal(chartReadsKey("1.45.201", "nodelocal.resources"), false);
    assert.equal(chartReadsKey("1.45.205", "nodelocal.resources"), true);
    assert.equal(chartReadsKey("1.44.300", "podLabels"), false);
    assert.equal(chartReadsKey("1.45.201", "podLabels"), true);
  });

  it("has no nodelocal.corefile, tolerations, affinity or priorityClassName in any chart", () => {
    const values = {
      nodelocal: {
        enabled: true,
        corefile: "x",
        tolerations: [],
        affinity: {},
        priorityClassName: "x",
      },
    };
    assert.deepEqual(unknownValueKeys(values), [
      "nodelocal.corefile",
      "nodelocal.tolerations",
      "nodelocal.affinity",
      "nodelocal.priorityClassName",
    ]);
  });

  it("judges extraClusterDomains unknown to a chart before 1.46.003", () => {
    const values = { nodelocal: { enabled: true, extraClusterDomains: ["local"] } };
    assert.deepEqual(unknownValueKeys(values, "1.46.002"), [KEY]);
    assert.deepEqual(unknownValueKeys(values, "1.46.201"), []);
  });
});

describe("node-local Corefile per chart version", () => {
  const nodelocal = {
    enabled: true,
    ip_address: "169.254.20.10",
    ipvs: true,
    extraClusterDomains: ["local", "ai-ear.cn"],
  };
  const globals = { clusterDnsIp: "10.13.0.10", clusterDomain: "cluster.local" };

  it("chart 1.46.201 serves the fix's zones in the cluster-domain block, forwarded to CoreDNS", () => {
    const corefile = renderChartNodeLocalCorefile(nodelocal, globals, "1.46.201");
    assert.equal(corefile.split("\n")[0], "cluster.local:53 local:53 ai-ear.cn:53 {");
    const block = routeName(parseCorefile(corefile), "ai-ear.cn.local")!;
    assert.ok(block.body.includes("forward . 10.13.0.10 {"), block.body.join("\n"));
  });

  it("chart 1.46.002 leaves them out: they fall to `.:53` and go to the node's upstream", () => {
    const corefile = renderChartNodeLocalCorefile(nodelocal, globals, "1.46.002");
    assert.equal(corefile.split("\n")[0], "cluster.local:53 {");
    for (const name of ["ai-ear.cn.local", "ai-ear.cn"]) {
      const block = routeName(parseCorefile(corefile), name)!;
      assert.deepEqual(block.zones, ["."], name);
      assert.ok(block.body.includes("forward . __PILLAR__UPSTREAM__SERVERS__"), name);
    }
  });

  it("renders as the newest chart when no version is given", () => {
    assert.equal(
      renderChartNodeLocalCorefile(nodelocal, globals),
      renderChartNodeLocalCorefile(nodelocal, globals, "1.46.201"),
    );
  });
});
