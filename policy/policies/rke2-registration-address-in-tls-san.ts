import { StackValidationPolicy } from "@pulumi/policy";
import * as YAML from "yaml";
import { RKE2_NODE_START, urlHost } from "../../components/model";

/**
 * Joining servers and agents register at their `server:` address and check the certificate the
 * servers present there. A server's own addresses are in that certificate already (RKE2 adds
 * them); a fixed registration address (a VIP or DNS name) is only there when tls-san lists it
 * (rancher/rke2-docs@9477b7b1:docs/install/ha.md, docs/reference/server_config.md).
 */
export const rke2RegistrationAddressInTlsSan: StackValidationPolicy = {
  name: "rke2-registration-address-in-tls-san",
  description:
    "Every RKE2 server lists in tls-san each registration address that joining servers and agents use, other than a server's own address.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    // Each node step carries the config.yaml keys it writes as its `config` input.
    const configs = args.resources
      .filter((r) => r.type === RKE2_NODE_START.token)
      .map((r) => ({
        r,
        isServer: r.props.role === "server",
        config: (YAML.parse(String(r.props.config ?? "")) ?? {}) as Record<string, unknown>,
      }));
    const servers = configs.filter((c) => c.isServer);
    const serverIps = new Set(servers.map((c) => String(c.config["node-ip"])));
    // Each address a node registers through that is not a server's own, with who uses it.
    const registrations = new Map<string, string[]>();
    for (const { config } of configs) {
      const host = urlHost(config.server);
      if (host === undefined || serverIps.has(host)) continue;
      registrations.set(host, [...(registrations.get(host) ?? []), String(config["node-name"])]);
    }
    for (const { r, config } of servers) {
      const sans = ((config["tls-san"] ?? []) as unknown[]).map((s) => String(s).toLowerCase());
      for (const [address, users] of registrations) {
        if (sans.includes(address)) continue;
        reportViolation(
          `${String(config["node-name"])}'s tls-san lacks ${address}, the registration address of ${users.join(", ")}: ` +
            "a server's certificate carries its own addresses but a VIP or DNS name only when tls-san lists it, so " +
            "nodes registering through it fail to verify the certificate. Add it to rke2.tlsSan.",
          r.urn,
        );
      }
    }
  },
};
