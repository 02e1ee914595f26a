import { rke2ServerInTlsSan as policy } from "../../policy/policies/rke2-server-in-tls-san";
import {
  REMOTE_FILE_TYPE,
  RKE2_CONFIG_PATH,
  RKE2_NODE_START_TYPE,
} from "../../policy/policies/resource-types";
import { assertNoViolations, assertViolation, resource } from "./util";

function server(octet: number, tlsSan: string[]) {
  const host = `192.168.122.${octet}`;
  const config = `node-name: sza1220${octet}.local\nnode-ip: ${host}\ntls-san:\n${tlsSan.map((s) => `  - ${s}`).join("\n")}\n`;
  return [
    resource(RKE2_NODE_START_TYPE, { role: "server", connection: { host } }, `start-${octet}`),
    resource(
      REMOTE_FILE_TYPE,
      { path: RKE2_CONFIG_PATH, connection: { host }, content: config },
      `config-${octet}`,
    ),
  ];
}

describe("policy rke2-server-in-tls-san", () => {
  const all = ["192.168.122.20", "192.168.122.21"];

  it("accepts configs that list every server", async () => {
    await assertNoViolations(policy, [...server(20, all), ...server(21, all)]);
  });

  it("flags a config missing a server address", async () => {
    await assertViolation(
      policy,
      [...server(20, ["192.168.122.20"]), ...server(21, all)],
      /lacks 192\.168\.122\.21/,
    );
  });
});
