import { ResourceValidationPolicy } from "@pulumi/policy";
import { configList } from "./config-lists";
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

/**
 * The registry a resource's RKE2 nodes pull system images from (undefined registry: none set),
 * with what to call the resource and the stack key that sets it; undefined for a resource that
 * pulls none, or whose config a preview does not know yet.
 */
function registryOf(
  type: string,
  props: Record<string, unknown>,
): { subject: string; registry: string | undefined; key: string } | undefined {
  if (type === RKE2_NODE_START.token) {
    // Only a server's flag: an agent takes the registry from the server it bootstraps from
    // (rancher/rke2@v1.35.6+rke2r1:pkg/cli/cmds/agent.go hides it there as no longer
    // supported; ../../components/rke2-cluster/config.ts renderRke2AgentConfig).
    // The node step carries the config.yaml keys it writes as its `config` input.
    if (props.role !== "server" || isUnknownProp(props, "config")) return undefined;
    return {
      subject: `${String(props.node)}'s RKE2 config`,
      registry: systemDefaultRegistryOf(props.config),
      key: "rke2.privateRegistry",
    };
  }
  if (type !== RANCHER_CLUSTER_TYPE || isUnknownProp(props, "rkeConfig")) return undefined;
  const rkeConfig = objectProp(props, "rkeConfig");
  const registry = rkeConfig && clusterRegistry(rkeConfig);
  if (rkeConfig === undefined || registry === null) return undefined;
  return {
    subject: `Rancher cluster ${String(props.name)}`,
    registry,
    key: "that cluster's rancher.downstreamClusters[].privateRegistry",
  };
}

export const rke2SystemImagesFromAllowedRegistry: ResourceValidationPolicy = {
  name: "rke2-system-images-from-allowed-registry",
  description:
    "Every RKE2 server and downstream cluster pulls its system images from a registry that the policy pack's config allows (allowedRegistries); with no list configured, any registry is allowed.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      allowedRegistries: configList(
        "Registries (host[:port], as RKE2's system-default-registry takes them) the estate's RKE2 system images may come from; docker.io stands for a node that sets none. Empty: any.",
        "^[A-Za-z0-9.-]+(:[0-9]{1,5})?$",
      ),
    },
  },
  validateResource: (args, reportViolation) => {
    const { allowedRegistries } = args.getConfig<{ allowedRegistries: string[] }>();
    if (allowedRegistries.length === 0) return;
    const found = registryOf(args.type, args.props);
    if (found === undefined) return;
    const pulledFrom = found.registry ?? DOCKER_HUB;
    if (allowedRegistries.some((r) => r.toLowerCase() === pulledFrom.toLowerCase())) return;
    reportViolation(
      `${found.subject} pulls RKE2's system images from ${pulledFrom}` +
        (found.registry === undefined ? " (it sets no system-default-registry)" : "") +
        `, which the policy pack's config does not allow (allowedRegistries: ${allowedRegistries.join(", ")}): ` +
        "an estate that can reach only its own registries cannot start nodes whose images are elsewhere. " +
        `Set ${found.key} to an allowed registry, or add ${pulledFrom} to allowedRegistries.`,
    );
  },
};
