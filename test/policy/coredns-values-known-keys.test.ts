import { corednsValuesKnownKeys as policy } from "../../policy/policies/coredns-values-known-keys";
import { assertNoViolations, assertViolation } from "./util";
import { compliantValues, helmChartConfig } from "./dns-fixture";

describe("policy coredns-values-known-keys", () => {
  it("accepts the product's values", async () => {
    await assertNoViolations(policy, [helmChartConfig(compliantValues())]);
  });

  it("flags seed 001's invented values", async () => {
    const values = {
      ...compliantValues(),
      force_tcp: true,
      healthTimeout: "5s",
      security: { spoofProtection: true },
    };
    await assertViolation(policy, [helmChartConfig(values)], /force_tcp, healthTimeout, security/);
  });

  it("flags an unknown key under nodelocal", async () => {
    const values = compliantValues();
    (values.nodelocal as unknown as Record<string, unknown>).force_tcp = true;
    await assertViolation(policy, [helmChartConfig(values)], /nodelocal\.force_tcp/);
  });
});
