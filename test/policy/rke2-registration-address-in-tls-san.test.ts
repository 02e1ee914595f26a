import { rke2RegistrationAddressInTlsSan as policy } from "../../policy/policies/rke2-registration-address-in-tls-san";
import { RKE2_NODE_START } from "../../components/model";
import * as YAML from "yaml";
import type { RecordedResource } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

const VIP = "rke2.example.com";

interface NodeConfig {
  readonly role: "server" | "agent";
  readonly server?: string;
  readonly tlsSan?: string[];
}

/** The compliant fixture: three servers and an agent registering through the VIP in tls-san. */
function fixture(): Record<number, NodeConfig> {
  return {
    20: { role: "server", tlsSan: [VIP] },
    21: { role: "server", server: `https://${VIP}:9345`, tlsSan: [VIP] },
    22: { role: "server", server: `https://${VIP}:9345`, tlsSan: [VIP] },
    30: { role: "agent", server: `https://${VIP}:9345` },
  };
}

function resources(nodes: Record<number, NodeConfig>): RecordedResource[] {
  return Object.entries(nodes).flatMap(([octet, node]) => {
    const host = `192.168.122.${octet}`;
    const config = {
      ...(node.server !== undefined ? { server: node.server } : {}),
      "node-name": `sza1220${octet}.local`,
      "node-ip": host,
      ...(node.tlsSan !== undefined ? { "tls-san": node.tlsSan } : {}),
    };
    return [
      resource(
        RKE2_NODE_START.token,
        { role: node.role, connection: { host }, config: YAML.stringify(config) },
        `start-${octet}`,
      ),
    ];
  });
}

describe("policy rke2-registration-address-in-tls-san", () => {
  it("accepts servers and an agent registering through a VIP that every server lists", async () => {
    await assertNoViolations(policy, resources(fixture()));
  });

  it("accepts a server joining through the first server's own address without a tls-san entry", async () => {
    const nodes = fixture();
    nodes[21] = { ...nodes[21], server: "https://192.168.122.20:9345" };
    await assertNoViolations(policy, resources(nodes));
  });

  it("flags a joining server whose tls-san lacks the address it registers through", async () => {
    const nodes = fixture();
    nodes[22] = { ...nodes[22], tlsSan: [] };
    await assertViolation(
      policy,
      resources(nodes),
      /sza122022\.local's tls-san lacks rke2\.example\.com, the registration address of sza122021\.local, sza122022\.local, sza122030\.local/,
    );
  });

  it("flags the first server when its tls-san lacks the registration address", async () => {
    const nodes = fixture();
    nodes[20] = { ...nodes[20], tlsSan: undefined };
    await assertViolation(
      policy,
      resources(nodes),
      /sza122020\.local's tls-san lacks rke2\.example\.com/,
    );
  });

  it("flags an agent registering through a name no server lists in tls-san", async () => {
    const nodes = fixture();
    nodes[30] = { ...nodes[30], server: "https://other.example.com:9345" };
    await assertViolation(
      policy,
      resources(nodes),
      /tls-san lacks other\.example\.com, the registration address of sza122030\.local/,
    );
  });
});
