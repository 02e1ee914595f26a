/**
 * The names of the providers behind the program's dynamic resources, and the text every loader
 * carries. A leaf: the registry (../host-providers.ts) maps each name to its provider, and the
 * resources' base (./host-step-resource.ts, ./provider-stub.ts) names one, so neither side
 * imports the other.
 */
export const HOST_PROVIDER_NAMES = [
  "libvirtDns",
  "nodePreparation",
  "portsPreflight",
  "remoteFile",
  "upstreamPreflight",
  "sshEgressCheck",
  "manifestCheck",
  "kubeEgressCheck",
  "nodeStart",
  "joinGate",
  "kubeconfig",
  "nodeRegistration",
  "clusterWait",
] as const;

export type HostProviderName = (typeof HOST_PROVIDER_NAMES)[number];

/** Text every loader carries, so state that holds a provider's code is told apart from it. */
export const PROVIDER_STUB_MARKER = "rke2-remediation provider loader";
