import { libvirtDhcpDomainLocal } from "../../policy/policies/libvirt-dhcp-domain-local";
import { LIBVIRT_DNS_RECORDS } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy libvirt-dhcp-domain-local (advisory)", () => {
  it("advises when the network was found handing out domain local", async () => {
    await assertViolation(
      libvirtDhcpDomainLocal,
      [resource(LIBVIRT_DNS_RECORDS.token, { network: "default", domain: "local" })],
      /search domain "local"/,
    );
  });

  it("stays quiet for another domain or before the network was read", async () => {
    await assertNoViolations(libvirtDhcpDomainLocal, [
      resource(LIBVIRT_DNS_RECORDS.token, { network: "default", domain: "lab.example" }),
      resource(LIBVIRT_DNS_RECORDS.token, { network: "default" }, "unread"),
    ]);
  });
});
