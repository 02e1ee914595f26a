import { rancherClusterHasEtcdControlplaneWorker as policy } from "../../policy/policies/rancher-cluster-has-etcd-controlplane-worker";
import { changed, registrationChain } from "./rancher-fixture";
import { assertNoViolations, assertViolation } from "./util";

describe("policy rancher-cluster-has-etcd-controlplane-worker", function () {
  this.timeout(60000);
  const compliant = registrationChain();

  it("accepts a cluster with etcd, controlplane and worker nodes", async () => {
    await assertNoViolations(policy, compliant);
  });

  it("flags a cluster without a worker, citing the planner's rule", async () => {
    const noWorkers = compliant.filter((r) => !/sza12203[04]/.test(r.name));
    await assertViolation(
      policy,
      noWorkers,
      /uat1 registers no node with role worker: .*clusterIsSane/,
    );
  });

  it("flags a cluster without a controlplane node", async () => {
    let resources = compliant;
    for (const n of ["31", "32", "33"]) {
      resources = changed(resources, `register-sza1220${n}.local`, { inputs: { roles: ["etcd"] } });
    }
    await assertViolation(policy, resources, /no node with role controlplane/);
  });
});
