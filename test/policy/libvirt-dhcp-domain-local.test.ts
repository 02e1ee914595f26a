import { libvirtDhcpDomainLocal } from "../../policy/policies/libvirt-dhcp-domain-local";
import { LIBVIRT_DNS_TYPE } from "../../policy/policies/resource-types";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy libvirt-dhcp-domain-local (advisory)", () => {
  it("advises when the network was found handing out domain local", async () => {
    await assertViolation(
      libvirtDhcpDomainLocal,
      [resource(LIBVIRT_DNS_TYPE, { network: "default", domain: "local" })],
      /search domain "local"/,
    );
  });

  it("stays quiet for another domain or before the network was read", async () => {
    await assertNoViolations(libvirtDhcpDomainLocal, [
      resource(LIBVIRT_DNS_TYPE, { network: "default", domain: "lab.example" }),
      resource(LIBVIRT_DNS_TYPE, { network: "default" }, "unread"),
    ]);
  });
});
