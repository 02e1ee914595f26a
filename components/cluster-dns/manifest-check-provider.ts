/**
 * The manifest check on one server as a dynamic provider (./manifest-conflicts.ts says why): a
 * read-only script lists the files RKE2 would apply there, and creating the check fails while any
 * of them defines the fix's object.
 */
import * as pulumi from "@pulumi/pulumi";
import { DNS_MANIFEST_CHECK, NodeSpec } from "../model";
import { scriptRef, scriptText } from "../assets";
import { HostCheckState, hostCheckProvider } from "../ssh/host-check-provider";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";
import { rke2FactsScriptRef } from "../remote-file";
import { manifestConflictFailure, manifestConflicts } from "./manifest-conflicts";

export interface ManifestCheckState extends HostCheckState {
  /** The fix's own manifest on this server (the first server), left out of the check; "" elsewhere. */
  readonly own: string;
  /** rke2-facts.sh, which finds the data-dir RKE2 reads on the server. */
  readonly rke2FactsScript: string;
  /** Files that also define the object; empty when the fix may be written. */
  readonly conflicts: readonly string[];
}

export const manifestCheckProvider = hostCheckProvider<ManifestCheckState>({
  label: (state) => `DNS manifest check on ${state.node}`,
  findingsKey: "conflicts",
  inputs: ["own", "rke2FactsScript"],
  params: (state) => ({
    OWN: state.own,
    RKE2_FACTS_SCRIPT: scriptText(state.rke2FactsScript, `node ${state.node}`),
  }),
  timeoutMs: 60000,
  findings: (stdout) => manifestConflicts(stdout),
  failure: manifestConflictFailure,
  id: (state) => `${state.node}/dns-manifest-check`,
});

/**
 * The check on one server. `own` is the fix's manifest path on the server that gets it: the
 * data-dir is the host's (rke2-facts.sh), so the script compares it under the data-dir it finds.
 */
export function manifestCheck(
  name: string,
  server: NodeSpec,
  sshPrivateKey: SshKey,
  ownManifest: string | undefined,
  opts: pulumi.CustomResourceOptions,
): pulumi.Resource {
  return new HostStepResource(
    "manifestCheck",
    DNS_MANIFEST_CHECK,
    name,
    {
      ssh: server.ssh,
      sshPrivateKey,
      script: scriptRef(__dirname, "manifest-facts.sh"),
    },
    {
      node: server.name,
      own: ownManifest ?? "",
      rke2FactsScript: rke2FactsScriptRef(),
      conflicts: [],
    },
    opts,
  );
}
