/**
 * An operator's own rke2-coredns values beside the fix (components/cluster-dns/kept-values.ts):
 * what is kept, what the fix replaces, and which values a live HelmChartConfig hands on.
 */
import * as assert from "assert/strict";
import * as YAML from "yaml";
import { CorednsServer } from "../../components/cluster-dns/chart";
import {
  keepOperatorValues,
  OPERATOR_VALUES_ANNOTATION,
  operatorValuesOf,
  parseValuesContent,
  serverKey,
} from "../../components/cluster-dns/kept-values";
import { ANNOTATIONS, helmChartConfigObject } from "../../components/cluster-dns/manifests";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import { estateModel } from "../support/lab-stack";

/** What an operator wrote, as rke2-docs' "Customizing Packaged Components" shows it. */
const OPERATOR_VALUES = `replicaCount: 2
priorityClassName: system-cluster-critical
servers:
  - zones:
      - zone: .
        use_tcp: true
    port: 53
    plugins:
      - name: errors
      - name: log
      - name: forward
        parameters: . 10.0.0.53
      - name: cache
        parameters: "300"
        configBlock: |-
          success 9984 300
          denial 9984 30
  - zones:
      - zone: corp.example
    port: 53
    plugins:
      - name: forward
        parameters: . 10.20.0.53
nodelocal:
  enabled: false
  resources:
    limits:
      memory: 64Mi
`;

describe("an operator's rke2-coredns values kept beside the fix", () => {
  const model = estateModel();
  const fix = clusterDnsChartValues(model.dns, model.management);
  const merged = keepOperatorValues(fix, YAML.parse(OPERATOR_VALUES));
  const servers = merged.values.servers as CorednsServer[];
  const block = (key: string) => servers.find((s) => serverKey(s) === key);
  const plugin = (key: string, name: string) => block(key)?.plugins.find((p) => p.name === name);

  it("keeps top-level values the fix does not set", () => {
    assert.equal(merged.values.replicaCount, 2);
    assert.equal(merged.values.priorityClassName, "system-cluster-critical");
    assert.ok(merged.kept.includes("replicaCount"));
  });

  it("keeps a tuned cache and an added plugin in the block the fix renders", () => {
    assert.deepEqual(plugin(".:53", "cache"), {
      name: "cache",
      parameters: "300",
      configBlock: "success 9984 300\ndenial 9984 30",
    });
    assert.deepEqual(plugin(".:53", "log"), { name: "log" });
    assert.ok(merged.kept.includes("servers[.:53].cache"), merged.kept.join(", "));
  });

  it("replaces the plugins that make the fix: forward to the stack's upstreams, Rancher's hosts", () => {
    assert.equal(plugin(".:53", "forward")?.parameters, ". 192.168.122.1");
    assert.match(plugin(".:53", "hosts")?.configBlock ?? "", /192\.168\.122\.20 ai-ear\.cn/);
    assert.ok(merged.replaced.includes("servers[.:53].forward"), merged.replaced.join(", "));
  });

  it("keeps a server block of a zone the fix does not render, after the fix's blocks", () => {
    const keys = servers.map(serverKey);
    assert.deepEqual(keys.slice(0, 3), ["cluster.local:53", "local:53", ".:53"]);
    assert.equal(keys[3], "corp.example:53");
    assert.equal(plugin("corp.example:53", "forward")?.parameters, ". 10.20.0.53");
  });

  it("takes nodelocal's own keys from the fix and keeps the operator's others", () => {
    const nodelocal = merged.values.nodelocal as Record<string, unknown>;
    assert.equal(nodelocal.enabled, true);
    assert.deepEqual(nodelocal.extraClusterDomains, ["local", "ai-ear.cn"]);
    assert.deepEqual(nodelocal.resources, { limits: { memory: "64Mi" } });
    assert.ok(merged.replaced.includes("nodelocal.enabled"));
  });

  it("gives the fix's own values back unchanged when they are what the live object holds", () => {
    const again = keepOperatorValues(fix, JSON.parse(JSON.stringify(fix)));
    assert.deepEqual(again.values, JSON.parse(JSON.stringify(fix)));
    assert.deepEqual([again.kept, again.replaced], [[], []]);
  });

  it("drops forward from the neutralised domain's block, where it would undo the NXDOMAIN", () => {
    const theirs = {
      servers: [
        {
          zones: [{ zone: "local" }],
          port: 53,
          plugins: [{ name: "forward", parameters: ". 10.0.0.53" }],
        },
      ],
    };
    const got = keepOperatorValues(fix, theirs);
    const local = (got.values.servers as CorednsServer[]).find((s) => serverKey(s) === "local:53");
    assert.equal(
      local?.plugins.some((p) => p.name === "forward"),
      false,
    );
    assert.deepEqual(got.replaced, ["servers[local:53].forward"]);
  });

  it("drops seed 000's own extraConfig blocks for local and Rancher's name, keeping the operator's others", () => {
    const theirs = {
      extraConfig: {
        local: { parameters: "{\n  template IN ANY local {\n    rcode NXDOMAIN\n  }\n}" },
        "ai-ear.cn": { parameters: "{\n  template IN A ai-ear.cn {\n  }\n}" },
        "corp.example:53": { parameters: "{\n  forward . 10.20.0.53\n}" },
      },
    };
    const got = keepOperatorValues(fix, theirs);
    assert.deepEqual(Object.keys(got.values.extraConfig as object), ["corp.example:53"]);
    assert.deepEqual(got.replaced, ["extraConfig.local", "extraConfig.ai-ear.cn"]);
    assert.deepEqual(got.kept, ["extraConfig.corp.example:53"]);
  });

  it("names the object when its valuesContent is not YAML", () => {
    assert.throws(
      () => parseValuesContent("servers: [\n", "the rke2-coredns HelmChartConfig of lab"),
      /the valuesContent of the rke2-coredns HelmChartConfig of lab is not YAML/,
    );
  });

  describe("which values a live HelmChartConfig hands on", () => {
    const own = ANNOTATIONS.rke2Version;

    it("none when there is no object, or when this project wrote it without kept values", () => {
      assert.equal(operatorValuesOf({ found: false }, own), undefined);
      const ours = {
        found: true as const,
        valuesContent: "servers: []\n",
        annotations: { [own]: "v1" },
      };
      assert.equal(operatorValuesOf(ours, own), undefined);
    });

    it("the recorded text, not the merged values, when this project wrote it", () => {
      const ours = {
        found: true as const,
        valuesContent: "merged: true\n",
        annotations: { [own]: "v1", [OPERATOR_VALUES_ANNOTATION]: OPERATOR_VALUES },
      };
      assert.deepEqual(operatorValuesOf(ours, own), { text: OPERATOR_VALUES, adopted: false });
    });

    it("the whole valuesContent, adopted, when its operators wrote it", () => {
      const theirs = { found: true as const, valuesContent: OPERATOR_VALUES, annotations: {} };
      assert.deepEqual(operatorValuesOf(theirs, own), { text: OPERATOR_VALUES, adopted: true });
    });
  });

  it("the HelmChartConfig carries the merged values and records the operator's text", () => {
    const object = helmChartConfigObject(fix, model.management, model.dns, OPERATOR_VALUES) as {
      metadata: { annotations: Record<string, string> };
      spec: { valuesContent: string };
    };
    assert.equal(object.metadata.annotations[OPERATOR_VALUES_ANNOTATION], OPERATOR_VALUES);
    assert.deepEqual(
      YAML.parse(object.spec.valuesContent),
      JSON.parse(JSON.stringify(merged.values)),
    );
    const plain = helmChartConfigObject(fix, model.management, model.dns) as typeof object;
    assert.equal(OPERATOR_VALUES_ANNOTATION in plain.metadata.annotations, false);
  });
});
