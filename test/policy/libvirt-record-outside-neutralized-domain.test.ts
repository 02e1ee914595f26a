import { libvirtRecordOutsideNeutralizedDomain } from "../../policy/policies/libvirt-record-outside-neutralized-domain";
import { LIBVIRT_DNS_RECORDS } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy libvirt-record-outside-neutralized-domain", () => {
  const compliant = {
    neutralizedSearchDomains: ["local"],
    records: [{ ip: "192.168.122.20", hostnames: ["ai-ear.cn"] }],
  };

  it("accepts records outside the neutralised domains", async () => {
    await assertNoViolations(libvirtRecordOutsideNeutralizedDomain, [
      resource(LIBVIRT_DNS_RECORDS.token, compliant),
    ]);
  });

  it("rejects a record under a neutralised domain", async () => {
    const props = {
      ...compliant,
      records: [{ ip: "192.168.122.20", hostnames: ["rancher.local"] }],
    };
    await assertViolation(
      libvirtRecordOutsideNeutralizedDomain,
      [resource(LIBVIRT_DNS_RECORDS.token, props)],
      /rancher\.local .* NXDOMAIN/,
    );
  });
});
