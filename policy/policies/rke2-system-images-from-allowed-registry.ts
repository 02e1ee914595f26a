import { ResourceValidationPolicy } from "@pulumi/policy";
import * as YAML from "yaml";
import { RANCHER_CLUSTER_TYPE, RKE2_NODE_START } from "../../components/model";
import { isUnknownProp, knownProp, objectProp } from "./props";

/**
 * Where RKE2 pulls its system images from. `system-default-registry` is the "private registry to
 * be used for all system images" (rancher/rke2-docs@9477b7b1:docs/reference/server_config.md), a
 * host and optional port (docs/install/airgap.md); without it the images' names carry no
 * registry, and such names are Docker Hub's (docs/install/private_registry.md: "images without
 * a registry specified in their name are implicitly identified as being from `docker.io`").
 */
const DOCKER_HUB = "docker.io";

/** The `system-default-registry` of one config.yaml text, undefined when it sets none or is no mapping. */
function systemDefaultRegistryOf(configText: unknown): string | undefined {
  if (typeof configText !== "string" || configText.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = YAML.parse(configText);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const value = (parsed as Record<string, unknown>)["system-default-registry"];
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

/**
 * The registry a ClusterV2's machines pull system images from: Rancher writes
 * `rkeConfig.machineGlobalConfig` and every selector-less `machineSelectorConfigs[].config` into
 * each machine's config.yaml. Null while a preview does not know those texts yet.
 */
function clusterRegistry(rkeConfig: Record<string, unknown>): string | undefined | null {
  const keys = ["machineGlobalConfig", "machineSelectorConfigs"];
  if (keys.some((k) => isUnknownProp(rkeConfig, k))) return null;
  const selectorConfigs = rkeConfig.machineSelectorConfigs;
  const texts = [
    rkeConfig.machineGlobalConfig,
    ...(Array.isArray(selectorConfigs)
      ? selectorConfigs
          .filter((s) => typeof s === "object" && s !== null && !("machineLabelSelector" in s))
          .map((s) => knownProp(s as Record<string, unknown>, "config"))
      : []),
  ];
  return texts.map(systemDefaultRegistryOf).find((r) => r !== undefined);
}

export const rke2SystemImagesFromAllowedRegistry: ResourceValidationPolicy = {
  name: "rke2-system-images-from-allowed-registry",
  description:
    "Every RKE2 server and downstream cluster pulls its system images from a registry that the policy pack's config allows (allowedRegistries); with no list configured, any registry is allowed.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      allowedRegistries: {
        type: "array",
        items: { type: "string", pattern: "^[A-Za-z0-9.-]+(:[0-9]{1,5})?$" },
        default: [],
        description:
          "Registries (host[:port], as RKE2's system-default-registry takes them) the estate's RKE2 system images may come from; docker.io stands for a node that sets none. Empty: any.",
      },
    },
  },
  validateResource: (args, reportViolation) => {
    const { allowedRegistries } = args.getConfig<{ allowedRegistries: string[] }>();
    if (allowedRegistries.length === 0) return;
    const allowed = new Set(allowedRegistries.map((r) => r.toLowerCase()));
    let subject: string;
    let registry: string | undefined;
    let where: string;
    if (args.type === RKE2_NODE_START.token) {
      // Only a server's flag: an agent takes the registry from the server it bootstraps from
      // (rancher/rke2@v1.35.6+rke2r1:pkg/cli/cmds/agent.go hides it there as no longer
      // supported; ../../components/rke2-cluster/config.ts renderRke2AgentConfig).
      if (args.props.role !== "server") return;
      // The node step carries the config.yaml keys it writes as its `config` input.
      // Judged once the preview knows the config.
      if (isUnknownProp(args.props, "config")) return;
      subject = `${String(args.props.node)}'s RKE2 config`;
      registry = systemDefaultRegistryOf(args.props.config);
      where = "rke2.privateRegistry";
    } else if (args.type === RANCHER_CLUSTER_TYPE) {
      const rkeConfig = isUnknownProp(args.props, "rkeConfig")
        ? undefined
        : objectProp(args.props, "rkeConfig");
      if (rkeConfig === undefined) return;
      const found = clusterRegistry(rkeConfig);
      if (found === null) return;
      subject = `Rancher cluster ${String(args.props.name)}`;
      registry = found;
      where = "that cluster's rancher.downstreamClusters[].privateRegistry";
    } else {
      return;
    }
    const pulledFrom = registry ?? DOCKER_HUB;
    if (allowed.has(pulledFrom.toLowerCase())) return;
    reportViolation(
      `${subject} pulls RKE2's system images from ${pulledFrom}` +
        (registry === undefined ? " (it sets no system-default-registry)" : "") +
        `, which the policy pack's config does not allow (allowedRegistries: ${allowedRegistries.join(", ")}): ` +
        "an estate that can reach only its own registries cannot start nodes whose images are elsewhere. " +
        `Set ${where} to an allowed registry, or add ${pulledFrom} to allowedRegistries.`,
    );
  },
};
