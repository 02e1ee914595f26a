import { corednsForwardNotALoop as policy } from "../../policy/policies/coredns-forward-not-a-loop";
import { assertNoViolations, assertViolation } from "./util";
import { compliantValues, helmChartConfig } from "./dns-fixture";

function forwardingTo(target: string) {
  const values = compliantValues();
  const dot = values.servers!.find((s) => s.zones[0].zone === ".")!;
  (dot.plugins as { name: string; parameters?: string }[]).find(
    (p) => p.name === "forward",
  )!.parameters = `. ${target}`;
  return values;
}

describe("policy coredns-forward-not-a-loop", () => {
  it("accepts forwarding to the stack's resolvers", async () => {
    await assertNoViolations(policy, [helmChartConfig(compliantValues())]);
  });

  it("flags forwarding to the node-local cache", async () => {
    await assertViolation(
      policy,
      [helmChartConfig(forwardingTo("169.254.20.10"))],
      /node-local cache/,
    );
  });

  it("flags forwarding to the cluster DNS address", async () => {
    await assertViolation(policy, [helmChartConfig(forwardingTo("10.13.0.10"))], /CoreDNS itself/);
  });

  it("flags forwarding to a loopback address", async () => {
    await assertViolation(policy, [helmChartConfig(forwardingTo("127.0.0.53"))], /loopback/);
  });
});
