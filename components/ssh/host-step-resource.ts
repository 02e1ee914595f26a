/**
 * The inputs every SSH-backed dynamic resource shares, written once: the host's pinned endpoint
 * as `connection` (the SSH policies check it), the fingerprint of the key the step connects with
 * (the key itself is the stack's `sshPrivateKey`, read by the provider: ./host-material.ts), and
 * the reference of the script the step runs there.
 */
import * as pulumi from "@pulumi/pulumi";
import type { HostProviderName } from "./provider-names";
import type { DynamicResourceType, SshEndpoint } from "../model";
import { sshKeyFingerprint } from "./host-material";
import { providerLoader } from "./provider-stub";
import { pinnedEndpoint } from "./run-script";

/**
 * The SSH private key a step connects with, a secret: the stack's `sshPrivateKey`, or a key kept
 * under another config key of the stack (`{ value, configKey: "myorg:sshKey" }`, where a program
 * or Pulumi ESC keeps it). Only its fingerprint is recorded, with the config key's name when it is
 * not `sshPrivateKey`: the provider reads the key from that config key when it connects.
 */
export type SshKey = pulumi.Input<string> | ConfiguredSshKey;

/** A key kept under another stack config key than `sshPrivateKey`. */
export interface ConfiguredSshKey {
  readonly value: pulumi.Input<string>;
  /** The full config key (`myorg:sshKey`). */
  readonly configKey: string;
}

function isConfiguredKey(key: SshKey): key is ConfiguredSshKey {
  return typeof key === "object" && key !== null && "configKey" in key;
}

function keyParts(key: SshKey): { value: pulumi.Input<string>; configKey?: string } {
  if (isConfiguredKey(key)) return { value: key.value, configKey: key.configKey };
  return { value: key as pulumi.Input<string> };
}

/** Where a step runs and what it runs. */
export interface HostStepTarget {
  readonly ssh: SshEndpoint;
  /** The key the step connects with; only its fingerprint (and config key) is recorded. */
  readonly sshPrivateKey: SshKey;
  /** The step's script reference (`scriptRef`), as input `script`; a step whose script has
   * another name (the cluster wait's `checkScript`) passes it among its own inputs. */
  readonly script?: string;
}

/** The fingerprint a step records for its key: not a secret (it names the public half). */
function keyFingerprint(privateKey: pulumi.Input<string>): pulumi.Output<string> {
  return pulumi.unsecret(pulumi.output(privateKey).apply(sshKeyFingerprint));
}

/**
 * A dynamic resource served by the named provider of ../host-providers, with ./provider-stub.ts's
 * text as its `__provider`. It is registered under the token `dynamic.Resource` gives,
 * `pulumi-nodejs:dynamic/<module>:<type>` (pulumi/pulumi@v3.276.0 sdk/nodejs/dynamic/index.ts),
 * so its URN and provider stay those of the resources state already holds.
 */
export class HostProviderResource extends pulumi.CustomResource {
  constructor(
    provider: HostProviderName,
    type: DynamicResourceType,
    name: string,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions,
  ) {
    if ("__provider" in props) throw new Error(`${name}: __provider is the resource's loader`);
    super(type.token, name, { __provider: providerLoader(provider), ...props }, opts);
  }
}

export class HostStepResource extends HostProviderResource {
  /**
   * `props` are the step's own inputs; `opts.additionalSecretOutputs` names outputs kept secret.
   * (`sshPrivateKey` stays listed: state written before fingerprints holds the key, and a
   * refresh of it must keep it encrypted.)
   */
  constructor(
    provider: HostProviderName,
    type: DynamicResourceType,
    name: string,
    target: HostStepTarget,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions,
  ) {
    super(
      provider,
      type,
      name,
      {
        connection: pinnedEndpoint(target.ssh),
        sshKeyFingerprint: keyFingerprint(keyParts(target.sshPrivateKey).value),
        ...(keyParts(target.sshPrivateKey).configKey === undefined
          ? {}
          : { sshKeyConfig: keyParts(target.sshPrivateKey).configKey }),
        ...(target.script === undefined ? {} : { script: target.script }),
        ...props,
      },
      {
        ...opts,
        additionalSecretOutputs: ["sshPrivateKey", ...(opts.additionalSecretOutputs ?? [])],
      },
    );
  }
}
