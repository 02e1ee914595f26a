import { rke2TokenKeptSecret as policy } from "../../policy/policies/rke2-token-kept-secret";
import { RKE2_NODE_START } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy rke2-token-kept-secret", () => {
  const props = {
    node: "sza122020.local",
    config: "token: K10abc\nnode-ip: 192.168.122.20\n",
  };

  it("accepts a config stored as a secret", async () => {
    await assertNoViolations(policy, [
      { ...resource(RKE2_NODE_START.token, props), additionalSecretOutputs: ["config"] },
    ]);
  });

  it("flags a config with the token in plain state", async () => {
    await assertViolation(
      policy,
      [resource(RKE2_NODE_START.token, props)],
      /join token but is not a secret/,
    );
  });
});
