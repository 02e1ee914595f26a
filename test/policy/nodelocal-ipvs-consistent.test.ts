import { nodeLocalIpvsConsistent as policy } from "../../policy/policies/nodelocal-ipvs-consistent";
import { assertNoViolations, assertViolation } from "./util";
import { compliantValues, helmChartConfig } from "./dns-fixture";

describe("policy nodelocal-ipvs-consistent", () => {
  it("accepts ipvs: true with kubelet pointing at the cache", async () => {
    await assertNoViolations(policy, [helmChartConfig(compliantValues())]);
  });

  it("flags nodelocal.ipvs false under IPVS kube-proxy", async () => {
    const values = compliantValues();
    values.nodelocal = { ...values.nodelocal!, ipvs: false };
    await assertViolation(policy, [helmChartConfig(values)], /nodelocal\.ipvs is not true/);
  });

  it("flags kubelet still pointing at kube-dns", async () => {
    await assertViolation(
      policy,
      [helmChartConfig(compliantValues(), "10.13.0.10")],
      /cluster-dns is 10\.13\.0\.10/,
    );
  });
});
