import { rancherFirstGroupOneEtcd as policy } from "../../policy/policies/rancher-first-group-one-etcd";
import { changed, registrationChain } from "./rancher-fixture";
import { assertNoViolations, assertViolation } from "./util";

describe("policy rancher-first-group-one-etcd", function () {
  this.timeout(60000);
  const compliant = registrationChain();

  it("accepts one etcd node in the first group", async () => {
    await assertNoViolations(policy, compliant);
  });

  it("flags a second etcd node registering with the first group, citing the init node election", async () => {
    await assertViolation(
      policy,
      changed(compliant, "register-sza122032.local", { after: [] }),
      /uat1: sza122031\.local, sza122032\.local are etcd nodes registering together.*electInitNode.*too many learner members/,
    );
  });

  it("flags an etcd node that waits for the first registration but for no sync", async () => {
    await assertViolation(
      policy,
      changed(compliant, "register-sza122032.local", { after: ["register-sza122031.local"] }),
      /sza122031\.local, sza122032\.local are etcd nodes registering together/,
    );
  });
});
