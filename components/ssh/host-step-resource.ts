/**
 * The inputs every SSH-backed dynamic resource shares, written once: the host's pinned endpoint
 * as `connection` (the SSH policies check it), the private key as a secret that stays encrypted
 * in state, and the script the step runs there.
 */
import * as pulumi from "@pulumi/pulumi";
import type { DynamicResourceType, SshEndpoint } from "../model";
import { pinnedEndpoint } from "./run-script";

/** Where a step runs and what it runs. */
export interface HostStepTarget {
  readonly ssh: SshEndpoint;
  readonly sshPrivateKey: pulumi.Input<string>;
  /** The step's script, as input `script`; a step whose script has another name (the cluster
   * wait's `checkScript`) passes it among its own inputs. */
  readonly script?: string;
}

export class HostStepResource extends pulumi.dynamic.Resource {
  /**
   * `props` are the step's own inputs; `opts.additionalSecretOutputs` names outputs kept secret
   * besides the private key.
   */
  constructor(
    provider: pulumi.dynamic.ResourceProvider,
    type: DynamicResourceType,
    name: string,
    target: HostStepTarget,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions,
  ) {
    super(
      provider,
      name,
      {
        connection: pinnedEndpoint(target.ssh),
        sshPrivateKey: pulumi.secret(target.sshPrivateKey),
        ...(target.script === undefined ? {} : { script: target.script }),
        ...props,
      },
      {
        ...opts,
        additionalSecretOutputs: ["sshPrivateKey", ...(opts.additionalSecretOutputs ?? [])],
      },
      type.module,
      type.type,
    );
  }
}
