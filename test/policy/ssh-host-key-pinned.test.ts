import { sshHostKeyPinned } from "../../policy/policies/ssh-host-key-pinned";
import {
  NODE_PREPARATION,
  RANCHER_NODE_REGISTRATION,
  REMOTE_COMMAND_TYPE,
} from "../../components/model";
import { assertNoViolations, assertViolation, HOST_KEY, resource } from "./util";

describe("policy ssh-host-key-pinned", () => {
  const compliant = {
    connection: { host: "192.168.122.20", port: 22, user: "root", hostKey: HOST_KEY },
  };

  it("accepts a connection with a pinned ed25519 key", async () => {
    await assertNoViolations(sshHostKeyPinned, [resource(NODE_PREPARATION.token, compliant)]);
  });

  it("rejects a remote command without a host key", async () => {
    const props = { connection: { host: "192.168.122.20", user: "root" }, create: "true" };
    await assertViolation(
      sshHostKeyPinned,
      [resource(REMOTE_COMMAND_TYPE, props)],
      /192\.168\.122\.20 must pin the host key/,
    );
  });

  it("rejects a Rancher node registration without a host key", async () => {
    const props = { node: "sza122031.local", connection: { host: "192.168.122.31", user: "root" } };
    await assertViolation(
      sshHostKeyPinned,
      [resource(RANCHER_NODE_REGISTRATION.token, props)],
      /192\.168\.122\.31 must pin the host key/,
    );
  });

  it("rejects a host key that is a fingerprint rather than a key line", async () => {
    const props = { connection: { ...compliant.connection, hostKey: "SHA256:abcdef" } };
    await assertViolation(
      sshHostKeyPinned,
      [resource(NODE_PREPARATION.token, props)],
      /must pin the host key/,
    );
  });

  it("ignores resources that open no SSH session", async () => {
    await assertNoViolations(sshHostKeyPinned, [resource("kubernetes:core/v1:ConfigMap", {})]);
  });
});
