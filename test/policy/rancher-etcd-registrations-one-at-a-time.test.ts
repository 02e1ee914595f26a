import { rancherEtcdRegistrationsOneAtATime as policy } from "../../policy/policies/rancher-etcd-registrations-one-at-a-time";
import { RANCHER_NODE_REGISTRATION } from "../../components/model";
import {
  changed,
  clusterSync,
  labProgramResources,
  registration,
  registrationChain,
} from "./rancher-fixture";
import { assertNoViolations, assertViolation } from "./util";

describe("policy rancher-etcd-registrations-one-at-a-time", function () {
  this.timeout(60000);
  const compliant = registrationChain();

  it("accepts each further etcd node behind the previous one's sync", async () => {
    await assertNoViolations(policy, compliant);
  });

  it("flags two further etcd nodes after the same sync, citing the learner limit", async () => {
    await assertViolation(
      policy,
      changed(compliant, "register-sza122033.local", { after: ["sync-sza122031.local"] }),
      /sza122032\.local and sza122033\.local \(etcd\) may register into uat1 without a sync between them.*too many learner members/,
    );
  });

  it("does not count a sync that waits for another cluster's node", async () => {
    const uat2 = registration(
      { node: "szb1.local", ip: "192.168.123.10", roles: ["etcd", "controlplane"] },
      [],
      "uat2",
    );
    await assertViolation(
      policy,
      changed([...compliant, uat2, clusterSync("szb1.local", [uat2])], "register-sza122033.local", {
        after: ["sync-szb1.local"],
      }),
      /sza122032\.local and sza122033\.local \(etcd\) may register into uat1/,
    );
  });

  it("accepts the lab stack's own registration order", async function () {
    await assertNoViolations(policy, await labProgramResources(RANCHER_NODE_REGISTRATION.token));
  });
});
