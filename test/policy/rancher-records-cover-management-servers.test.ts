import { rancherRecordsCoverManagementServers } from "../../policy/policies/rancher-records-cover-management-servers";
import { assertNoViolations, assertViolation } from "./util";
import { estateModel } from "../support/lab-stack";
import { resourcesOf } from "../support/program";

describe("policy rancher-records-cover-management-servers", function () {
  this.timeout(60000);
  const model = estateModel();

  it("accepts the lab estate: ai-ear.cn on .20, .21 and .22", async () => {
    await assertNoViolations(rancherRecordsCoverManagementServers, await resourcesOf(model));
  });

  it("rejects records that miss a server", async () => {
    const libvirt = {
      ...model.libvirt,
      dnsRecords: { "ai-ear.cn": ["192.168.122.20", "192.168.122.21"] },
    };
    await assertViolation(
      rancherRecordsCoverManagementServers,
      await resourcesOf({ ...model, libvirt }),
      /missing 192\.168\.122\.22/,
    );
  });

  it("rejects a record pointing at a node that is not a server", async () => {
    const libvirt = {
      ...model.libvirt,
      dnsRecords: {
        "ai-ear.cn": ["192.168.122.20", "192.168.122.21", "192.168.122.22", "192.168.122.30"],
      },
    };
    await assertViolation(
      rancherRecordsCoverManagementServers,
      await resourcesOf({ ...model, libvirt }),
      /not a server: 192\.168\.122\.30/,
    );
  });
});
