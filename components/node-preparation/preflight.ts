/**
 * Preflight of live state, separate from config validation: after node preparation, each server
 * must reach every other server on the RKE2 ports. Backed by a dynamic provider whose `read`
 * checks again, so a REJECT rule that comes back shows up on refresh.
 */
import * as pulumi from "@pulumi/pulumi";
import { NodeSpec, PORTS_PREFLIGHT } from "../model";
import { scriptRef } from "../assets";
import { HostCheckState, hostCheckProvider } from "../ssh/host-check-provider";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";

/** etcd client, etcd peer, etcd metrics, apiserver, supervisor, kubelet. */
export const RKE2_SERVER_PORTS = [2379, 2380, 2381, 6443, 9345, 10250];

export type PortVerdict = "open" | "closed" | "prohibited" | "timeout";

export interface PortCheck {
  readonly peer: string;
  readonly port: number;
  readonly verdict: PortVerdict;
}

export function parsePortChecks(stdout: string): PortCheck[] {
  return stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length === 3)
    .map(([peer, port, verdict]) => ({
      peer,
      port: Number(port),
      verdict: verdict as PortVerdict,
    }));
}

/** Connections that a firewall refuses or swallows; closed ports are fine before RKE2 runs. */
export function blockedChecks(checks: readonly PortCheck[]): PortCheck[] {
  return checks.filter((c) => c.verdict === "prohibited" || c.verdict === "timeout");
}

interface PreflightState extends HostCheckState {
  readonly peers: readonly string[];
  readonly ports: readonly number[];
  /** Connections found blocked; empty when the preflight holds. */
  readonly blocked: readonly string[];
}

export const preflightProvider = hostCheckProvider<PreflightState>({
  label: (state) => `preflight on ${state.node}`,
  findingsKey: "blocked",
  inputs: ["peers", "ports"],
  params: (state) => ({
    PEERS: state.peers.join(" "),
    PORTS: state.ports.join(" "),
    CONNECT_TIMEOUT: "3",
  }),
  timeoutMs: 300000,
  findings: (stdout, state) =>
    blockedChecks(parsePortChecks(stdout)).map(
      (c) => `${state.node} -> ${c.peer}:${c.port} ${c.verdict}`,
    ),
  failure: (_state, blocked) =>
    `server ports blocked after node preparation: ${blocked.join("; ")}. ` +
    "etcd peers and the supervisor must reach each other before servers join (seed 003); look for REJECT/DROP rules on the path.",
  id: (state) => `${state.node}/ports-preflight`,
});

class PortsPreflightResource extends HostStepResource {
  declare readonly blocked: pulumi.Output<string[]>;
}

export interface ServerPortsPreflightArgs {
  readonly server: NodeSpec;
  /** The other servers it must reach. */
  readonly peers: readonly NodeSpec[];
  readonly sshPrivateKey: SshKey;
  readonly ports?: readonly number[];
}

/** One server's view: every other server reachable on the RKE2 ports (closed is fine). */
export class ServerPortsPreflight extends pulumi.ComponentResource {
  public readonly blocked: pulumi.Output<string[]>;

  constructor(
    name: string,
    args: ServerPortsPreflightArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("rke2remediation:node:ServerPortsPreflight", name, {}, opts);
    const { server } = args;
    const resource = new PortsPreflightResource(
      "portsPreflight",
      PORTS_PREFLIGHT,
      `${name}-check`,
      {
        ssh: server.ssh,
        sshPrivateKey: args.sshPrivateKey,
        script: scriptRef(__dirname, "preflight-ports.sh"),
      },
      {
        node: server.name,
        peers: args.peers.map((p) => p.ip),
        ports: [...(args.ports ?? RKE2_SERVER_PORTS)],
        blocked: [],
      },
      { parent: this },
    );
    this.blocked = resource.blocked;
    this.registerOutputs({ blocked: this.blocked });
  }
}
