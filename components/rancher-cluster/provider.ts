/**
 * Dynamic provider for one node's registration into a Rancher downstream custom cluster. The
 * command is checked before it runs (CA pinned by --ca-checksum unless the stack opted in to the
 * insecure one) and runs over SSH with the host key pinned; the token it carries is cut out of
 * every log line and error. `read` reports whether the node is still registered, so refresh shows
 * a node whose agent was removed. Delete never unregisters a node.
 */
import * as pulumi from "@pulumi/pulumi";
import * as ssh from "../ssh/run-script";
import {
  redact,
  registrationCommandProblem,
  rke2UnitFor,
  roleFlags,
  tokenOf,
} from "./registration";

export interface NodeRegistrationState {
  readonly node: string;
  readonly nodeIp: string;
  readonly cluster: string;
  /** etcd, controlplane, worker: the flags appended to Rancher's command. */
  readonly roles: readonly string[];
  readonly connection: ssh.PinnedTarget;
  readonly sshPrivateKey: string;
  /** Rancher's node command; a secret. */
  readonly registrationCommand: string;
  readonly insecure: boolean;
  /** Rancher's CA as the stack pins it, and its SHA-256 (what --ca-checksum must carry). */
  readonly caCertificate?: string;
  readonly caChecksum?: string;
  /** Rancher's hostname: names the CA's file in the node's trust store. */
  readonly rancherHost: string;
  readonly script: string;
  readonly timeoutSeconds: number;
  readonly pollSeconds: number;
  /** What the last run found: false when the node's agent is no longer registered. */
  readonly registered?: boolean;
}

async function register(state: NodeRegistrationState, mode: "apply" | "check") {
  const secrets = [tokenOf(state.registrationCommand), state.registrationCommand];
  const label = `node ${state.node}`;
  if (mode === "apply") {
    const problem = registrationCommandProblem(
      state.registrationCommand,
      state.insecure,
      state.caChecksum,
    );
    if (problem) throw new Error(`${label}: not registered into ${state.cluster}: ${problem}.`);
  }
  try {
    return await ssh.runHostScript(state.connection, state.sshPrivateKey, state.script, {
      label,
      params: {
        MODE: mode,
        REGISTRATION_COMMAND: state.registrationCommand,
        RANCHER_CA: state.caCertificate ?? "",
        RANCHER_HOST: state.rancherHost,
        ROLE_FLAGS: roleFlags(state.roles).join(" "),
        WAIT_UNIT: rke2UnitFor(state.roles),
        TIMEOUT_SECONDS: String(state.timeoutSeconds),
        POLL_SECONDS: String(state.pollSeconds),
      },
      timeoutMs: (state.timeoutSeconds + 300) * 1000,
      log: mode === "apply" ? (line) => pulumi.log.info(redact(line, secrets)) : undefined,
    });
  } catch (err) {
    throw new Error(redact((err as Error).message, secrets));
  }
}

export const nodeRegistrationProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: NodeRegistrationState, news: NodeRegistrationState) {
    // A changed command (a rotated token) does not re-register a registered node; a node that
    // lost its registration, or new roles, do.
    const changes =
      olds.registered === false ||
      ssh.inputsDiffer(olds, news, [
        "roles",
        "connection",
        "insecure",
        "caChecksum",
        "caCertificate",
        "script",
        "timeoutSeconds",
        "pollSeconds",
        "sshPrivateKey",
      ]);
    return { changes, replaces: ssh.inputsDiffer(olds, news, ["cluster"]) ? ["cluster"] : [] };
  },
  async create(inputs: NodeRegistrationState) {
    await register(inputs, "apply");
    return { id: `${inputs.cluster}/${inputs.node}`, outs: { ...inputs, registered: true } };
  },
  async read(id: string, props: NodeRegistrationState) {
    const result = await register(props, "check");
    return { id, props: { ...props, registered: /registered=yes/.test(result.stdout) } };
  },
  async update(_id: string, _olds: NodeRegistrationState, news: NodeRegistrationState) {
    await register(news, "apply");
    return { outs: { ...news, registered: true } };
  },
  // A registered node stays in its cluster: removing it is Rancher's (and the operator's) call.
  async delete(_id: string, props: NodeRegistrationState) {
    pulumi.log.info(
      `node ${props.node}: left registered in ${props.cluster}; remove it in Rancher to take it out`,
    );
  },
};
