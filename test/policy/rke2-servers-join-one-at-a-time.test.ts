import { rke2ServersJoinOneAtATime as policy } from "../../policy/policies/rke2-servers-join-one-at-a-time";
import { assertNoViolations, assertViolation } from "./util";
import { estateModel } from "../support/lab-stack";
import { resourcesOf } from "../support/program";

describe("policy rke2-servers-join-one-at-a-time", function () {
  this.timeout(60000);
  const model = estateModel();

  it("accepts servers each waiting for the previous server's gate", async () => {
    await assertNoViolations(policy, await resourcesOf(model));
  });

  it("flags servers started in parallel, citing the learner limit", async () => {
    const parallel = {
      ...model,
      management: { ...model.management, serverJoin: "parallel" as const },
    };
    await assertViolation(
      policy,
      await resourcesOf(parallel),
      /too many learner members in cluster/,
    );
  });
});
