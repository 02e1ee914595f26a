import { rancherChartValuesCarryDnsFix as policy } from "../../policy/policies/rancher-chart-values-carry-dns-fix";
import { renderRancherChartValues } from "../../components/cluster-dns/manifests";
import { CorednsChartValues, CorednsPlugin } from "../../components/cluster-dns/chart";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import { RANCHER_CLUSTER_TYPE } from "../../components/model";
import type { RecordedResource } from "../../components/model";
import { seedValues } from "./dns-fixture";
import {
  changed,
  clusterV2,
  labProgramResources,
  libvirtRecords,
  model,
  registrationChain,
  uat1,
} from "./rancher-fixture";
import { assertNoViolations, assertViolation } from "./util";

describe("policy rancher-chart-values-carry-dns-fix", function () {
  this.timeout(60000);
  const productValues = clusterDnsChartValues(model.dns, uat1);
  const estate = (cluster: RecordedResource, records = libvirtRecords()) => [
    records,
    cluster,
    ...registrationChain(),
  ];
  const withValues = (values: CorednsChartValues) =>
    estate(clusterV2({ chartValues: renderRancherChartValues(values) }));
  /** The product's values with the `local` block's plugins replaced. */
  const localBlockWith = (plugins: CorednsPlugin[]) =>
    withValues({
      ...productValues,
      servers: productValues.servers!.map((s) =>
        s.zones[0].zone === "local" ? { ...s, plugins } : s,
      ),
    });

  it("accepts the product's values: local answered NXDOMAIN, cluster.local left to kubernetes", async () => {
    await assertNoViolations(policy, estate(clusterV2()));
  });

  it("flags a cluster whose chartValues carry no rke2-coredns values (seed 000)", async () => {
    await assertViolation(
      policy,
      estate(clusterV2({ chartValues: "" })),
      /cluster uat1: its nodes \(sza122031\.local, .*\) search local, .* carry no rke2-coredns values\..*times out on ai-ear\.cn\.local and the cluster never becomes Ready \(seed 000\)/,
    );
  });

  it("flags values without a block for the neutralised domain", async () => {
    await assertViolation(
      policy,
      withValues({
        ...productValues,
        servers: productValues.servers!.filter((s) => s.zones[0].zone !== "local"),
      }),
      /does not answer ai-ear\.cn\.local with NXDOMAIN itself/,
    );
  });

  it("flags a local block that forwards upstream instead of answering", async () => {
    await assertViolation(
      policy,
      localBlockWith([{ name: "errors" }, { name: "forward", parameters: ". 192.168.122.1" }]),
      /does not answer ai-ear\.cn\.local with NXDOMAIN itself/,
    );
  });

  it("flags a template that answers NXDOMAIN for A queries only (AAAA still waits)", async () => {
    await assertViolation(
      policy,
      localBlockWith([
        { name: "errors" },
        { name: "template", parameters: "IN A local", configBlock: "rcode NXDOMAIN" },
      ]),
      /does not answer ai-ear\.cn\.local with NXDOMAIN itself/,
    );
  });

  it("flags seed 000's own values, whose `local` block captures cluster.local", async () => {
    await assertViolation(
      policy,
      withValues(seedValues()),
      /no longer answers cluster\.local from the kubernetes plugin \(the fix captures the cluster domain\)/,
    );
  });

  it("flags a local block that runs kubernetes behind its template, which answers first", async () => {
    const local = productValues.servers!.find((s) => s.zones[0].zone === "local")!;
    const kubernetes = productValues.servers![0].plugins.find((p) => p.name === "kubernetes")!;
    await assertViolation(
      policy,
      withValues({
        ...productValues,
        servers: productValues
          .servers!.filter((s) => s.zones[0].zone !== "cluster.local")
          .map((s) => (s === local ? { ...s, plugins: [...s.plugins, kubernetes] } : s)),
      }),
      /no longer answers cluster\.local from the kubernetes plugin/,
    );
  });

  it("flags chartValues that are not YAML", async () => {
    await assertViolation(
      policy,
      estate(clusterV2({ chartValues: "rke2-coredns: [unclosed" })),
      /chartValues are not a YAML mapping/,
    );
  });

  it("leaves a cluster alone when the stack neutralises no search domain", async () => {
    await assertNoViolations(policy, estate(clusterV2({ chartValues: "" }), libvirtRecords([])));
  });

  it("leaves a cluster alone when its nodes are outside the neutralised domains", async () => {
    const resources = estate(clusterV2({ chartValues: "" }));
    const outside = registrationChain()
      .filter((r) => r.inputs.node)
      .reduce(
        (rs, r) =>
          changed(rs, r.name, {
            inputs: { node: String(r.inputs.node).replace(/\.local$/, ".lan") },
          }),
        resources,
      );
    await assertNoViolations(policy, outside);
  });

  it("accepts the lab stack's own ClusterV2", async function () {
    await assertNoViolations(policy, await labProgramResources(RANCHER_CLUSTER_TYPE));
  });
});
