/**
 * The shared vocabulary: the environment model and the address arithmetic every layer uses.
 * `infra/` builds the model from stack config; components, renderers and policies read it.
 * Nothing here imports the Pulumi SDK.
 */
export * from "./environment";
export * from "./net";
export type { RecordedResource } from "./recorded-resource";
export * from "./resource-types";
export * from "./dns-names";
export * from "./words";
