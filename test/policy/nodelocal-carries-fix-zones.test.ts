import { nodeLocalCarriesFixZones as policy } from "../../policy/policies/nodelocal-carries-fix-zones";
import { assertNoViolations, assertViolation } from "./util";
import { compliantValues, helmChartConfig } from "./dns-fixture";

describe("policy nodelocal-carries-fix-zones", () => {
  it("accepts extraClusterDomains with local and ai-ear.cn", async () => {
    await assertNoViolations(policy, [helmChartConfig(compliantValues())]);
  });

  it("flags a missing `local`, which sends *.local past CoreDNS again", async () => {
    const values = compliantValues();
    values.nodelocal = { ...values.nodelocal!, extraClusterDomains: ["ai-ear.cn"] };
    await assertViolation(policy, [helmChartConfig(values)], /lacks local/);
  });

  it("flags a missing static host zone", async () => {
    const values = compliantValues();
    values.nodelocal = { ...values.nodelocal!, extraClusterDomains: ["local"] };
    await assertViolation(policy, [helmChartConfig(values)], /lacks ai-ear\.cn/);
  });
});
