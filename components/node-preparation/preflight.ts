/**
 * Preflight of live state, separate from config validation: after node preparation, each server
 * must reach every other server on the RKE2 ports. Backed by a dynamic provider whose `read`
 * checks again, so a REJECT rule that comes back shows up on refresh.
 */
import * as pulumi from "@pulumi/pulumi";
import { NodeSpec } from "../model";
import { componentFile } from "../assets";
import * as ssh from "../ssh/run-script";
import { pinnedTarget, PinnedTarget } from "../ssh/run-script";

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

interface PreflightState {
  readonly node: string;
  readonly connection: PinnedTarget;
  readonly sshPrivateKey: string;
  readonly script: string;
  readonly peers: readonly string[];
  readonly ports: readonly number[];
  /** Connections found blocked; empty when the preflight holds. */
  readonly blocked: readonly string[];
}

async function check(state: PreflightState): Promise<PortCheck[]> {
  const result = await ssh.runHostScript(state.connection, state.sshPrivateKey, state.script, {
    label: `preflight on ${state.node}`,
    params: { PEERS: state.peers.join(" "), PORTS: state.ports.join(" "), CONNECT_TIMEOUT: "3" },
    timeoutMs: 300000,
  });
  return parsePortChecks(result.stdout);
}

function describeBlocked(node: string, blocked: readonly PortCheck[]): string[] {
  return blocked.map((c) => `${node} -> ${c.peer}:${c.port} ${c.verdict}`);
}

const preflightProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: PreflightState, news: PreflightState) {
    const changes =
      olds.blocked.length > 0 ||
      ssh.inputsDiffer(olds, news, ["peers", "ports", "connection", "script", "sshPrivateKey"]);
    return { changes };
  },
  async create(inputs: PreflightState) {
    const blocked = blockedChecks(await check(inputs));
    if (blocked.length > 0) {
      throw new Error(
        `server ports blocked after node preparation: ${describeBlocked(inputs.node, blocked).join("; ")}. ` +
          "etcd peers and the supervisor must reach each other before servers join (seed 003); look for REJECT/DROP rules on the path.",
      );
    }
    return { id: `${inputs.node}/ports-preflight`, outs: { ...inputs, blocked: [] } };
  },
  async read(id: string, props: PreflightState) {
    return {
      id,
      props: { ...props, blocked: describeBlocked(props.node, blockedChecks(await check(props))) },
    };
  },
  async update(_id: string, _olds: PreflightState, news: PreflightState) {
    return { outs: (await preflightProvider.create!(news)).outs };
  },
  async delete() {},
};

class PortsPreflightResource extends pulumi.dynamic.Resource {
  declare readonly blocked: pulumi.Output<string[]>;

  constructor(name: string, props: pulumi.Inputs, opts: pulumi.CustomResourceOptions) {
    super(preflightProvider, name, props, opts, "node", "PortsPreflight");
  }
}

export interface ServerPortsPreflightArgs {
  readonly server: NodeSpec;
  /** The other servers it must reach. */
  readonly peers: readonly NodeSpec[];
  readonly sshPrivateKey: pulumi.Input<string>;
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
      `${name}-check`,
      {
        node: server.name,
        connection: pinnedTarget(server.ssh),
        sshPrivateKey: pulumi.secret(args.sshPrivateKey),
        script: componentFile(__dirname, "preflight-ports.sh"),
        peers: args.peers.map((p) => p.ip),
        ports: [...(args.ports ?? RKE2_SERVER_PORTS)],
        blocked: [],
      },
      { parent: this, additionalSecretOutputs: ["sshPrivateKey"] },
    );
    this.blocked = resource.blocked;
    this.registerOutputs({ blocked: this.blocked });
  }
}
