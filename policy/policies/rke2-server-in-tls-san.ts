import { StackValidationPolicy } from "@pulumi/policy";
import * as YAML from "yaml";
import {
  objectProp,
  REMOTE_FILE_TYPE,
  RKE2_CONFIG_PATH,
  RKE2_NODE_START_TYPE,
} from "./resource-types";

export const rke2ServerInTlsSan: StackValidationPolicy = {
  name: "rke2-server-in-tls-san",
  description: "Every RKE2 server's config lists every server address in tls-san.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const serverHosts = new Set(
      args.resources
        .filter((r) => r.type === RKE2_NODE_START_TYPE && r.props.role === "server")
        .map((r) => String(objectProp(r.props, "connection")?.host)),
    );
    const configs = args.resources
      .filter((r) => r.type === REMOTE_FILE_TYPE && r.props.path === RKE2_CONFIG_PATH)
      .filter((r) => serverHosts.has(String(objectProp(r.props, "connection")?.host)))
      .map((r) => ({
        r,
        config: (YAML.parse(String(r.props.content ?? "")) ?? {}) as Record<string, unknown>,
      }));
    const serverIps = configs.map((c) => String(c.config["node-ip"]));
    for (const { r, config } of configs) {
      const sans = ((config["tls-san"] ?? []) as unknown[]).map(String);
      const missing = serverIps.filter((ip) => !sans.includes(ip));
      if (missing.length > 0) {
        reportViolation(
          `${String(config["node-name"])}'s tls-san lacks ${missing.join(", ")}; clients and joining servers that address ` +
            "those servers cannot verify the API certificate.",
          r.urn,
        );
      }
    }
  },
};
