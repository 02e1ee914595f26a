import { rke2TokenKeptSecret as policy } from "../../policy/policies/rke2-token-kept-secret";
import { REMOTE_FILE, RKE2_CONFIG_PATH } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy rke2-token-kept-secret", () => {
  const props = {
    host: "sza122020.local",
    path: RKE2_CONFIG_PATH,
    content: "token: K10abc\nnode-ip: 192.168.122.20\n",
  };

  it("accepts a config stored as a secret", async () => {
    await assertNoViolations(policy, [
      { ...resource(REMOTE_FILE.token, props), additionalSecretOutputs: ["content"] },
    ]);
  });

  it("flags a config with the token in plain state", async () => {
    await assertViolation(
      policy,
      [resource(REMOTE_FILE.token, props)],
      /join token but is not a secret/,
    );
  });
});
