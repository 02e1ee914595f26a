import { corednsConfigMapStaysValid as policy } from "../../policy/policies/coredns-configmap-stays-valid";
import { assertNoViolations, assertViolation } from "./util";
import { compliantValues, helmChartConfig, seedValues } from "./dns-fixture";

describe("policy coredns-configmap-stays-valid", () => {
  it("accepts the product's values and the seed's (continuation lines indented four spaces)", async () => {
    await assertNoViolations(policy, [
      helmChartConfig(compliantValues()),
      helmChartConfig(seedValues()),
    ]);
  });

  it("catches parameters whose continuation lines are indented two spaces", async () => {
    const values = {
      ...compliantValues(),
      extraConfig: {
        example: { parameters: "{\n  template ANY ANY example {\n  rcode NXDOMAIN\n  }\n}" },
      },
    };
    await assertViolation(policy, [helmChartConfig(values)], /at least four leading spaces/);
  });
});
