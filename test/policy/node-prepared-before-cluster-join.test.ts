import { nodePreparedBeforeClusterJoin } from "../../policy/policies/node-prepared-before-cluster-join";
import {
  NODE_PREPARATION,
  RANCHER_NODE_REGISTRATION,
  REMOTE_COMMAND_TYPE,
} from "../../components/model";
import type { RecordedResource } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

const connection = { host: "192.168.122.21", user: "root" };
const prep = resource(
  NODE_PREPARATION.token,
  { node: "sza122021.local", connection },
  "prepare-21",
);
const install = (deps: RecordedResource[]): RecordedResource => ({
  ...resource(
    REMOTE_COMMAND_TYPE,
    {
      connection,
      create: "curl -sfL https://get.rke2.io | sh - && systemctl enable --now rke2-server",
    },
    "install-21",
  ),
  dependencies: deps.map((d) => d.urn),
});

describe("policy node-prepared-before-cluster-join", () => {
  it("accepts an install that depends on the node's preparation", async () => {
    await assertNoViolations(nodePreparedBeforeClusterJoin, [prep, install([prep])]);
  });

  it("rejects an install with no path to the node's preparation", async () => {
    await assertViolation(
      nodePreparedBeforeClusterJoin,
      [prep, install([])],
      /without depending on prepare-21/,
    );
  });

  it("follows dependencies transitively", async () => {
    const gate = {
      ...resource(REMOTE_COMMAND_TYPE, { connection, create: "true" }, "gate"),
      dependencies: [prep.urn],
    };
    await assertNoViolations(nodePreparedBeforeClusterJoin, [prep, gate, install([gate])]);
  });

  it("rejects a Rancher node registration with no path to the node's preparation", async () => {
    const registration = resource(
      RANCHER_NODE_REGISTRATION.token,
      { node: "sza122021.local", cluster: "uat1", connection },
      "register-21",
    );
    await assertViolation(
      nodePreparedBeforeClusterJoin,
      [prep, registration],
      /register-21 joins 192\.168\.122\.21 to a cluster without depending on prepare-21/,
    );
  });

  it("rejects a join on a node the stack never prepares", async () => {
    const other = {
      ...install([]),
      inputs: { connection: { host: "192.168.122.40" }, create: "systemctl start rke2-agent" },
    };
    await assertViolation(
      nodePreparedBeforeClusterJoin,
      [prep, other],
      /does not prepare that node/,
    );
  });
});
