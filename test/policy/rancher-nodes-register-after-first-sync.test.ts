import { rancherNodesRegisterAfterFirstSync as policy } from "../../policy/policies/rancher-nodes-register-after-first-sync";
import { RANCHER_NODE_REGISTRATION_TYPE } from "../../policy/policies/resource-types";
import {
  changed,
  clusterSync,
  labProgramResources,
  registration,
  registrationChain,
} from "./rancher-fixture";
import { assertNoViolations, assertViolation } from "./util";

describe("policy rancher-nodes-register-after-first-sync", function () {
  this.timeout(60000);
  // .31 -> sync -> .32 -> sync -> .33 -> sync -> workers .30 and .34 in parallel.
  const compliant = registrationChain();
  const register = (node: string) => `register-${node}`;
  const sync = (node: string) => `sync-${node}`;

  it("accepts servers one after another's sync, then workers in parallel", async () => {
    await assertNoViolations(policy, compliant);
  });

  it("flags a worker that registers without waiting for the first node's sync (seed 000)", async () => {
    await assertViolation(
      policy,
      changed(compliant, register("sza122030.local"), { after: [] }),
      /sza122031\.local, sza122030\.local register into uat1 without waiting for a ClusterSync.*"agent add failed" \(seed 000\)/,
    );
  });

  it("flags a node that waits for the first registration but not for its sync", async () => {
    await assertViolation(
      policy,
      changed(compliant, register("sza122032.local"), { after: [register("sza122031.local")] }),
      /sza122031\.local, sza122032\.local register into uat1 without waiting for a ClusterSync/,
    );
  });

  it("flags a first node without the etcd and controlplane roles", async () => {
    await assertViolation(
      policy,
      changed(compliant, register("sza122031.local"), { inputs: { roles: ["etcd"] } }),
      /first node to register into uat1, sza122031\.local, has roles etcd: .* must carry etcd and controlplane/,
    );
  });

  it("flags two later etcd/controlplane nodes that may register together, citing the learner limit", async () => {
    await assertViolation(
      policy,
      changed(compliant, register("sza122033.local"), { after: [sync("sza122031.local")] }),
      /sza122032\.local and sza122033\.local .*'too many learner members in cluster/,
    );
  });

  it("does not count a sync that waits for another cluster's node", async () => {
    const uat2 = registration(
      { node: "szb1.local", ip: "192.168.123.10", roles: ["etcd", "controlplane"] },
      [],
      "uat2",
    );
    const uat2Sync = clusterSync("szb1.local", [uat2]);
    await assertViolation(
      policy,
      changed([...compliant, uat2, uat2Sync], register("sza122030.local"), {
        after: [sync("szb1.local")],
      }),
      /sza122031\.local, sza122030\.local register into uat1/,
    );
  });

  it("accepts the lab stack's own registration order", async function () {
    await assertNoViolations(policy, await labProgramResources(RANCHER_NODE_REGISTRATION_TYPE));
  });
});
