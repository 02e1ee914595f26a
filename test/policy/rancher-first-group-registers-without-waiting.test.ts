import { rancherFirstGroupRegistersWithoutWaiting as policy } from "../../policy/policies/rancher-first-group-registers-without-waiting";
import { RANCHER_NODE_REGISTRATION } from "../../components/model";
import { changed, labProgramResources, registrationChain } from "./rancher-fixture";
import { assertNoViolations, assertViolation } from "./util";

describe("policy rancher-first-group-registers-without-waiting", function () {
  this.timeout(60000);
  // .31 and .30 together -> sync -> .32 -> sync -> .33 -> sync -> .34 -> sync.
  const compliant = registrationChain();

  it("accepts an etcd + controlplane node and a worker registering together before the first sync", async () => {
    await assertNoViolations(policy, compliant);
  });

  it("refuses the old order: the worker waits for a sync after the first node (seed 000 deadlock)", async () => {
    await assertViolation(
      policy,
      changed(compliant, "register-sza122030.local", { after: ["sync-sza122031.local"] }),
      /uat1: sza122030\.local \(worker\) registers only after a wait for the cluster, but the nodes before it \(sza122031\.local\) lack worker.*clusterIsSane.*seed 000/,
    );
  });

  it("refuses a first group whose controlplane node waits for the cluster", async () => {
    const noCp = changed(compliant, "register-sza122031.local", { inputs: { roles: ["etcd"] } });
    await assertViolation(
      policy,
      changed(noCp, "register-sza122032.local", { inputs: { roles: ["controlplane"] } }),
      /lack controlplane/,
    );
  });

  it("accepts the lab stack's own registration order", async function () {
    await assertNoViolations(policy, await labProgramResources(RANCHER_NODE_REGISTRATION.token));
  });
});
