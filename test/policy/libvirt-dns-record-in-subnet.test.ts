import { libvirtDnsRecordInSubnet } from "../../policy/policies/libvirt-dns-record-in-subnet";
import { LIBVIRT_DNS_RECORDS } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy libvirt-dns-record-in-subnet", () => {
  const compliant = {
    network: "default",
    subnet: "192.168.122.0/24",
    records: [
      { ip: "192.168.122.20", hostnames: ["ai-ear.cn"] },
      { ip: "192.168.122.21", hostnames: ["ai-ear.cn"] },
    ],
  };

  it("accepts records inside the subnet", async () => {
    await assertNoViolations(libvirtDnsRecordInSubnet, [
      resource(LIBVIRT_DNS_RECORDS.token, compliant),
    ]);
  });

  it("rejects a record outside the subnet", async () => {
    const props = {
      ...compliant,
      records: [...compliant.records, { ip: "10.0.0.5", hostnames: ["ai-ear.cn"] }],
    };
    await assertViolation(
      libvirtDnsRecordInSubnet,
      [resource(LIBVIRT_DNS_RECORDS.token, props)],
      /10\.0\.0\.5 lies outside 192\.168\.122\.0\/24/,
    );
  });

  it("rejects records whose subnet is unknown", async () => {
    await assertViolation(
      libvirtDnsRecordInSubnet,
      [resource(LIBVIRT_DNS_RECORDS.token, { ...compliant, subnet: undefined })],
      /subnet/,
    );
  });
});
