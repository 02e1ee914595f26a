/**
 * Dynamic provider for one node's registration into a Rancher downstream custom cluster.
 * Rancher's node command is parsed and checked on this side (shape, server, CA pinned by
 * --ca-checksum unless the stack opted in to the insecure one); the host gets its parts as
 * stdin-delivered parameters and runs the installer with them in the environment, so no command
 * line on the node carries the token. A node found registered counts only when it is registered
 * with this Rancher and into this cluster; a node registered elsewhere is an error. Tokens are cut
 * out of every log line and error. Delete never unregisters a node.
 */
import * as pulumi from "@pulumi/pulumi";
import type { SshEndpoint } from "../model";
import * as ssh from "../ssh/run-script";
import { planSecretCluster } from "./rancher-api";
import { checkNodeCommand, ParsedNodeCommand, redact, roleFlags, tokenOf } from "./registration";

export interface NodeRegistrationState {
  readonly node: string;
  readonly nodeIp: string;
  readonly cluster: string;
  /** etcd, controlplane, worker: the installer's role flags. */
  readonly roles: readonly string[];
  readonly connection: SshEndpoint;
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  /** Rancher's node command; a secret. */
  readonly registrationCommand: string;
  /** rancher.url: the command must register with it, and a registered node must be on it. */
  readonly rancherUrl: string;
  /** Rancher API token, to read the plan secret of a registered node; a secret. */
  readonly apiToken: string;
  readonly insecure: boolean;
  /** Rancher's CA as the stack pins it, and its checksum (what --ca-checksum must carry). */
  readonly caCertificate?: string;
  readonly caChecksum?: string;
  /** Rancher's hostname: names the CA's file in the node's trust store. */
  readonly rancherHost: string;
  readonly script: string;
  readonly timeoutSeconds: number;
  readonly pollSeconds: number;
  /** What the last run found: false when the node is no longer registered here. */
  readonly registered?: boolean;
  /** The machine's plan secret as the node's agent names it (validated Kubernetes names):
   * what the waits after this registration follow. */
  readonly planSecret?: { readonly namespace: string; readonly secretName: string };
}

/** What `register-node.sh` in check mode found on the host. */
export interface HostRegistration {
  readonly registered: boolean;
  readonly server?: string;
  readonly namespace?: string;
  readonly secretName?: string;
}

/** Parses the check line; a line that is not one stops with an error naming the host. */
export function parseHostRegistration(stdout: string, host: string): HostRegistration {
  const line = stdout
    .trim()
    .split("\n")
    .find((l) => l.startsWith("registered="));
  const fields = new Map(
    (line ?? "")
      .split(/\s+/)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
  const registered = fields.get("registered");
  if (registered !== "yes" && registered !== "no") {
    throw new Error(`${host}: the registration check printed no "registered=yes|no" line`);
  }
  if (registered === "no") return { registered: false };
  const server = fields.get("server");
  const namespace = fields.get("namespace");
  const secretName = fields.get("secretName");
  if (!server || !namespace || !secretName) {
    throw new Error(`${host}: the registration check gave no server, namespace or secretName`);
  }
  // They come from a file on the host and go into an API path: only Kubernetes names pass
  // (kubernetes/kubernetes@v1.35.4 pkg/apis/core/validation/validation.go: a namespace name is a
  // DNS-1123 label, ValidateNamespaceName; a secret name a DNS-1123 subdomain, ValidateSecretName).
  const label = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
  const subdomain =
    /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  if (!label.test(namespace) || !subdomain.test(secretName)) {
    throw new Error(
      `${host}: the agent's connection info names a plan secret that is not a Kubernetes object name ` +
        `(namespace "${namespace.slice(0, 80)}", name "${secretName.slice(0, 80)}"); nothing was asked of Rancher. ` +
        `Look at /var/lib/rancher/agent/rancher2_connection_info.json on the host.`,
    );
  }
  return { registered: true, server, namespace, secretName };
}

const sameUrl = (a: string, b: string) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "");

/**
 * Whether a registered node is registered here: with rancher.url, and (its plan secret's
 * `rke.cattle.io/cluster-name`) into this cluster. A node registered elsewhere is an error.
 */
async function registeredHere(state: NodeRegistrationState, found: HostRegistration) {
  if (!found.registered) return false;
  const label = `node ${state.node}`;
  if (!sameUrl(found.server!, state.rancherUrl)) {
    throw new Error(
      `${label}: rancher-system-agent is registered with another Rancher (${found.server}), not ${state.rancherUrl}; ` +
        "unregister it there (rancher-system-agent-uninstall.sh) before it can join cluster " +
        state.cluster,
    );
  }
  let cluster: string | undefined;
  try {
    cluster = await planSecretCluster(
      { url: state.rancherUrl, token: state.apiToken, caCertificate: state.caCertificate },
      found.namespace!,
      found.secretName!,
    );
  } catch (err) {
    throw new Error(
      `${label}: registered with ${state.rancherUrl}, but its plan secret ${found.namespace}/${found.secretName} ` +
        `could not be read to tell which cluster it is in: ${(err as Error).message}`,
    );
  }
  if (cluster !== state.cluster) {
    throw new Error(
      `${label}: registered with ${state.rancherUrl} into cluster ${cluster ?? "(no rke.cattle.io/cluster-name label)"}, ` +
        `not ${state.cluster}; remove it from that cluster in Rancher before it can join ${state.cluster}`,
    );
  }
  return true;
}

function hostParams(
  state: NodeRegistrationState,
  mode: "apply" | "check",
  cmd?: ParsedNodeCommand,
) {
  return {
    MODE: mode,
    INSTALLER_URL: cmd?.installerUrl ?? "",
    CATTLE_SERVER: cmd?.server ?? "",
    CATTLE_TOKEN: cmd?.token ?? "",
    CATTLE_CA_CHECKSUM: cmd?.caChecksum ?? "",
    INSECURE: String(cmd?.insecure ?? false),
    ROLE_FLAGS: roleFlags(state.roles).join(" "),
    RANCHER_CA: state.caCertificate ?? "",
    RANCHER_HOST: state.rancherHost,
    TIMEOUT_SECONDS: String(state.timeoutSeconds),
    POLL_SECONDS: String(state.pollSeconds),
  };
}

async function onHost(
  state: NodeRegistrationState,
  mode: "apply" | "check",
  cmd?: ParsedNodeCommand,
) {
  const secrets = [tokenOf(state.registrationCommand), state.registrationCommand, state.apiToken];
  try {
    return await ssh.runHostScript(state.connection, state, state.script, {
      label: `node ${state.node}`,
      params: hostParams(state, mode, cmd),
      timeoutMs: (state.timeoutSeconds + 300) * 1000,
      log: mode === "apply" ? (line) => pulumi.log.info(redact(line, secrets)) : undefined,
    });
  } catch (err) {
    throw new Error(redact((err as Error).message, secrets));
  }
}

/** What the host says and whether that is a registration here (errors when elsewhere). */
async function check(
  state: NodeRegistrationState,
): Promise<{ here: boolean; found: HostRegistration }> {
  const result = await onHost(state, "check");
  const found = parseHostRegistration(result.stdout, `node ${state.node}`);
  const secrets = [tokenOf(state.registrationCommand), state.apiToken];
  try {
    return { here: await registeredHere(state, found), found };
  } catch (err) {
    throw new Error(redact((err as Error).message, secrets));
  }
}

const planSecretOf = (found: HostRegistration): NodeRegistrationState["planSecret"] =>
  found.registered ? { namespace: found.namespace!, secretName: found.secretName! } : undefined;

/** Registers the node (once) and returns its machine's plan secret. */
async function register(
  state: NodeRegistrationState,
): Promise<NodeRegistrationState["planSecret"]> {
  const parsed = checkNodeCommand(state.registrationCommand, {
    rancherUrl: state.rancherUrl,
    insecure: state.insecure,
    caChecksum: state.caChecksum,
  });
  if ("problem" in parsed) {
    throw new Error(`node ${state.node}: not registered into ${state.cluster}: ${parsed.problem}.`);
  }
  if ((await check(state)).here) {
    pulumi.log.info(`node ${state.node}: registered into ${state.cluster} already`);
  }
  await onHost(state, "apply", parsed);
  const after = await check(state);
  if (!after.here) {
    throw new Error(
      `node ${state.node}: the agent installer finished, but the node does not read as registered into ${state.cluster}; run pulumi up again`,
    );
  }
  return planSecretOf(after.found);
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
        "rancherUrl",
        "script",
        "timeoutSeconds",
        "pollSeconds",
        "sshKeyFingerprint",
      ]);
    return { changes, replaces: ssh.inputsDiffer(olds, news, ["cluster"]) ? ["cluster"] : [] };
  },
  async create(inputs: NodeRegistrationState) {
    const planSecret = await register(inputs);
    return {
      id: `${inputs.cluster}/${inputs.node}`,
      outs: { ...inputs, registered: true, planSecret },
    };
  },
  async read(id: string, props: NodeRegistrationState) {
    const { here, found } = await check(props);
    return {
      id,
      props: { ...props, registered: here, planSecret: here ? planSecretOf(found) : undefined },
    };
  },
  async update(_id: string, _olds: NodeRegistrationState, news: NodeRegistrationState) {
    const planSecret = await register(news);
    return { outs: { ...news, registered: true, planSecret } };
  },
  // A registered node stays in its cluster: removing it is Rancher's (and the operator's) call.
  async delete(_id: string, props: NodeRegistrationState) {
    pulumi.log.info(
      `node ${props.node}: left registered in ${props.cluster}; remove it in Rancher to take it out`,
    );
  },
};
