import { networkPolicyDnsUdpAndTcp as policy } from "../../policy/policies/networkpolicy-dns-udp-and-tcp";
import { assertNoViolations, assertViolation } from "./util";
import { networkPolicy } from "./dns-fixture";

describe("policy networkpolicy-dns-udp-and-tcp", () => {
  it("accepts UDP and TCP 53", async () => {
    await assertNoViolations(policy, [
      networkPolicy([
        { protocol: "UDP", port: 53 },
        { protocol: "TCP", port: 53 },
      ]),
    ]);
  });

  it("flags a port without protocol (TCP only)", async () => {
    await assertViolation(policy, [networkPolicy([{ port: 53 }])], /without UDP/);
  });

  it("flags UDP only", async () => {
    await assertViolation(policy, [networkPolicy([{ protocol: "UDP", port: 53 }])], /without TCP/);
  });
});
