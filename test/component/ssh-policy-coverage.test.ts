/**
 * Every resource the program declares that opens SSH sessions (it carries a `connection` input)
 * is of a type the SSH policies check: a new SSH-backed type that the list in the model does not
 * name would go unchecked by ssh-host-key-pinned.
 */
import * as assert from "assert/strict";
import { RecordedResource, REMOTE_COMMAND_TYPE, SSH_RESOURCE_TYPES } from "../../components/model";
import { sshHostKeyPinned } from "../../policy/policies/ssh-host-key-pinned";
import { resource, violationsOf } from "../policy/util";
import { labResources } from "../support/program";

describe("SSH-backed resources and the SSH policies", function () {
  this.timeout(60000);
  let resources: RecordedResource[];

  before(async () => {
    resources = await labResources();
  });

  const withConnection = () => resources.filter((r) => r.custom && "connection" in r.inputs);

  it("declares only SSH-backed types that the SSH policies list", () => {
    const unchecked = [...new Set(withConnection().map((r) => r.type))].filter(
      (t) => !SSH_RESOURCE_TYPES.includes(t),
    );
    assert.deepEqual(
      unchecked,
      [],
      `types with a connection input the policies skip: ${unchecked}`,
    );
  });

  it("declares every SSH-backed type the policies list (the list has no stale entry)", () => {
    const declared = new Set(withConnection().map((r) => r.type));
    const stale = SSH_RESOURCE_TYPES.filter((t) => t !== REMOTE_COMMAND_TYPE && !declared.has(t));
    assert.deepEqual(stale, [], `listed but never declared by the lab stack: ${stale}`);
  });

  it("pins the host key in every declared connection, as ssh-host-key-pinned requires", async () => {
    assert.deepEqual(await violationsOf(sshHostKeyPinned, withConnection()), []);
  });

  it("refuses each listed type when its connection pins no host key", async () => {
    for (const type of SSH_RESOURCE_TYPES) {
      const unpinned = resource(type, { connection: { host: "192.168.122.20", port: 22 } });
      const found = await violationsOf(sshHostKeyPinned, [unpinned]);
      assert.equal(found.length, 1, `${type}: ${JSON.stringify(found)}`);
    }
  });
});
