import { corednsClusterDomainReachesKubernetes as policy } from "../../policy/policies/coredns-cluster-domain-reaches-kubernetes";
import { assertNoViolations, assertViolation } from "./util";
import { compliantValues, helmChartConfig, seedValues } from "./dns-fixture";

describe("policy coredns-cluster-domain-reaches-kubernetes", () => {
  it("accepts the product's fix: cluster.local has a block of its own", async () => {
    await assertNoViolations(policy, [helmChartConfig(compliantValues())]);
  });

  it("flags seed 000's literal `local` block, which captures every *.cluster.local name", async () => {
    await assertViolation(
      policy,
      [helmChartConfig(seedValues())],
      /kubernetes\.default\.svc\.cluster\.local|cluster\.local goes to the server block "local"/,
    );
  });

  it("flags the fix without its dedicated cluster-domain block", async () => {
    const values = compliantValues();
    values.servers = values.servers!.filter((s) => s.zones[0].zone !== "cluster.local");
    await assertViolation(policy, [helmChartConfig(values)], /no kubernetes plugin/);
  });

  it("flags a template in the cluster-domain block that answers NXDOMAIN before kubernetes", async () => {
    const values = compliantValues();
    const template = { name: "template", parameters: "ANY ANY", configBlock: "rcode NXDOMAIN" };
    values.servers = values.servers!.map((s) =>
      s.zones[0].zone === "cluster.local" ? { ...s, plugins: [template, ...s.plugins] } : s,
    );
    await assertViolation(policy, [helmChartConfig(values)], /template answers NXDOMAIN before/);
  });
});
