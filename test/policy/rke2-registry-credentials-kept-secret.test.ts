import { rke2RegistryCredentialsKeptSecret as policy } from "../../policy/policies/rke2-registry-credentials-kept-secret";
import { RKE2_NODE_START } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy rke2-registry-credentials-kept-secret", () => {
  const registries = JSON.stringify({
    spec: { mirrors: { "reg:5000": { endpoint: ["http://reg:5000"] } }, configs: {} },
    auth: { "reg:5000": { username: "pull", password: "pw" } },
  });
  const props = {
    node: "sza122020.local",
    registries,
    managedRegistries: {
      "configs/reg:5000": JSON.stringify({
        auth: { password: "(secret: the stack's)", username: "(secret: the stack's)" },
      }),
    },
  };

  it("accepts credentials stored as a secret, shown in plain only as markers", async () => {
    await assertNoViolations(policy, [
      {
        ...resource(RKE2_NODE_START.token, props),
        additionalSecretOutputs: ["config", "registries"],
      },
    ]);
  });

  it("accepts entries without credentials in plain state", async () => {
    const plain = JSON.stringify({ spec: JSON.parse(registries).spec, auth: {} });
    await assertNoViolations(policy, [
      resource(RKE2_NODE_START.token, { ...props, registries: plain }),
    ]);
  });

  it("flags credentials in plain state", async () => {
    await assertViolation(
      policy,
      [{ ...resource(RKE2_NODE_START.token, props), additionalSecretOutputs: ["config"] }],
      /carry registry credentials but are not a secret/,
    );
  });

  it("flags a credential in the plain view", async () => {
    const leaked = {
      "configs/reg:5000": JSON.stringify({ auth: { password: "pw", username: "pull" } }),
    };
    await assertViolation(
      policy,
      [
        {
          ...resource(RKE2_NODE_START.token, { ...props, managedRegistries: leaked }),
          additionalSecretOutputs: ["config", "registries"],
        },
      ],
      /plain view of registries\.yaml/,
    );
  });
});
