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

/** A peer and the TCP ports a node must reach on it. */
export interface PortTarget {
  readonly peer: string;
  readonly ports: readonly number[];
}

interface PreflightState extends HostCheckState {
  readonly peers: readonly string[];
  readonly ports: readonly number[];
  /**
   * Each peer with its own ports, instead of every peer on `ports`: the preflight of every node
   * when firewalld is kept (nodePreparation.firewalld: keep). Absent on the servers' preflight.
   */
  readonly targets?: readonly PortTarget[];
  /** Connections found blocked; empty when the preflight holds. */
  readonly blocked: readonly string[];
}

export const preflightProvider = hostCheckProvider<PreflightState>({
  label: (state) => `preflight on ${state.node}`,
  findingsKey: "blocked",
  inputs: ["peers", "ports", "targets"],
  params: (state) => ({
    PEERS: state.peers.join(" "),
    PORTS: state.ports.join(" "),
    TARGETS: (state.targets ?? []).map((t) => [t.peer, ...t.ports].join(" ")).join(";"),
    CONNECT_TIMEOUT: "3",
  }),
  timeoutMs: 300000,
  findings: (stdout, state) =>
    blockedChecks(parsePortChecks(stdout)).map(
      (c) => `${state.node} -> ${c.peer}:${c.port} ${c.verdict}`,
    ),
  failure: (state, blocked) =>
    state.targets === undefined
      ? `server ports blocked after node preparation: ${blocked.join("; ")}. ` +
        "etcd peers and the supervisor must reach each other before servers join (seed 003); look for REJECT/DROP rules on the path."
      : `ports RKE2 needs are blocked after node preparation: ${blocked.join("; ")}. ` +
        "firewalld is kept (nodePreparation.firewalld: keep), so its zones must let RKE2's and the " +
        "CNI's ports in (rancher/rke2-docs install/requirements.md): on each node named after ->, " +
        "firewall-cmd --permanent --add-port=<port>/tcp (and the CNI's UDP ports), then " +
        "firewall-cmd --reload; or set nodePreparation.firewalld: disable. Nothing of RKE2 was started.",
  id: (state) => `${state.node}/ports-preflight`,
});

class PortsPreflightResource extends HostStepResource {
  declare readonly blocked: pulumi.Output<string[]>;
}

/** The check on `node`, a child of `parent`: what it connects to is in `probes`. */
function portsPreflight(
  parent: pulumi.Resource,
  name: string,
  node: NodeSpec,
  sshPrivateKey: SshKey,
  probes: Pick<PreflightState, "peers" | "ports" | "targets">,
): PortsPreflightResource {
  return new PortsPreflightResource(
    "portsPreflight",
    PORTS_PREFLIGHT,
    name,
    { ssh: node.ssh, sshPrivateKey, script: scriptRef(__dirname, "preflight-ports.sh") },
    { node: node.name, ...probes, blocked: [] },
    { parent },
  );
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
    const resource = portsPreflight(this, `${name}-check`, args.server, args.sshPrivateKey, {
      peers: args.peers.map((p) => p.ip),
      ports: [...(args.ports ?? RKE2_SERVER_PORTS)],
    });
    this.blocked = resource.blocked;
    this.registerOutputs({ blocked: this.blocked });
  }
}

export interface NodePortsPreflightArgs {
  readonly node: NodeSpec;
  /** Each peer of its cluster with the TCP ports the node must reach there (./ports.ts). */
  readonly targets: readonly { readonly peer: NodeSpec; readonly ports: readonly number[] }[];
  readonly sshPrivateKey: SshKey;
}

/**
 * One node's view when firewalld is kept: every peer of its cluster reachable on the TCP ports
 * RKE2 and the CNI need there (closed is fine: nothing may listen yet).
 */
export class NodePortsPreflight extends pulumi.ComponentResource {
  public readonly blocked: pulumi.Output<string[]>;

  constructor(name: string, args: NodePortsPreflightArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:node:NodePortsPreflight", name, {}, opts);
    const resource = portsPreflight(this, `${name}-check`, args.node, args.sshPrivateKey, {
      peers: [],
      ports: [],
      targets: args.targets
        .filter((t) => t.ports.length > 0)
        .map((t) => ({ peer: t.peer.ip, ports: [...t.ports] })),
    });
    this.blocked = resource.blocked;
    this.registerOutputs({ blocked: this.blocked });
  }
}
