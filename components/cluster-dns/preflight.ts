/**
 * Live preflight for seed 004, run from a node: each upstream resolver answers (any rcode) a
 * random-name HINFO query under in-addr.arpa within 2 s, the shape of query the loop plugin sends
 * and that 114.114.114.114 left unanswered in seed 004. `read` checks again, so a resolver that
 * went silent shows up on refresh.
 *
 * What a silent resolver does, and what it does not: CoreDNS's loop plugin sends
 * `<random>.<random>.<zone>` HINFO to its own server block at start and halts CoreDNS only when
 * it sees that same query come back more than twice, i.e. when a forward path leads back to the
 * cache itself; a probe that gets no answer is retried for 30 s, then the check turns itself off
 * (coredns/coredns@v1.14.7:plugin/loop/setup.go, plugin/loop/loop.go). So a silent upstream does
 * not crash-loop the cache; it makes every lookup that leaves the cluster wait for the forward
 * timeout. Seed 004's crash-loop was a loop; forward targets that are the cache are refused by
 * validation (`dns.upstreamResolvers`).
 */
import * as pulumi from "@pulumi/pulumi";
import { NodeSpec, UPSTREAM_PREFLIGHT } from "../model";
import { scriptRef } from "../assets";
import { HostCheckState, hostCheckProvider } from "../ssh/host-check-provider";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";

export interface UpstreamPreflightState extends HostCheckState {
  readonly upstreams: readonly string[];
  /** Upstreams that did not answer; empty when the preflight holds. */
  readonly silent: readonly string[];
}

export function silentUpstreams(stdout: string): string[] {
  return stdout
    .split("\n")
    .filter((l) => l.endsWith(" silent"))
    .map((l) => l.split(" ")[0]);
}

export const upstreamPreflightProvider = hostCheckProvider<UpstreamPreflightState>({
  label: (state) => `upstream preflight on ${state.node}`,
  findingsKey: "silent",
  inputs: ["upstreams"],
  params: (state) => ({ UPSTREAMS: state.upstreams.join(" ") }),
  timeoutMs: 60000,
  findings: (stdout) => silentUpstreams(stdout),
  failure: (state, silent) =>
    `upstream resolver(s) ${silent.join(", ")} did not answer a HINFO query under in-addr.arpa within 2 s ` +
    `(checked from ${state.node}). Forwarded to a resolver that stays silent, every lookup that leaves the ` +
    "cluster waits for the forward timeout before it fails or moves on, as CoreDNS's i/o timeouts to " +
    "114.114.114.114 showed (seed 004). That is not what crash-loops the cache: the loop plugin stops it " +
    "only when its own probe comes back to it, a forward path that leads back to the cache itself. " +
    "Use resolvers that answer, and at least two.",
  id: (state) => `${state.node}/upstream-preflight`,
});

class UpstreamPreflightResource extends HostStepResource {
  declare readonly silent: pulumi.Output<string[]>;
}

export interface UpstreamResolverPreflightArgs {
  /** The node the queries are sent from. */
  readonly node: NodeSpec;
  readonly sshPrivateKey: SshKey;
  readonly upstreams: readonly string[];
}

export class UpstreamResolverPreflight extends pulumi.ComponentResource {
  public readonly silent: pulumi.Output<string[]>;

  constructor(
    name: string,
    args: UpstreamResolverPreflightArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("rke2remediation:dns:UpstreamResolverPreflight", name, {}, opts);
    const { node } = args;
    const resource = new UpstreamPreflightResource(
      "upstreamPreflight",
      UPSTREAM_PREFLIGHT,
      `${name}-check`,
      {
        ssh: node.ssh,
        sshPrivateKey: args.sshPrivateKey,
        script: scriptRef(__dirname, "preflight-upstreams.sh"),
      },
      { node: node.name, upstreams: [...args.upstreams], silent: [] },
      { parent: this },
    );
    this.silent = resource.silent;
    this.registerOutputs({ silent: this.silent });
  }
}
