/**
 * Pure pieces of registering nodes into a Rancher downstream custom cluster: the order, the
 * role flags, the CA checksum, and the checks a registration command must pass before it runs.
 */
import { createHash } from "crypto";
import { DownstreamRole, NodeSpec } from "../../infra/config/model";

/** Where a node stands in the registration order (seed 000: later nodes get no plan until the
 * control plane is initialised, so nothing registers beside the first node). */
export type RegistrationStep =
  /** The first etcd + control-plane node; the cluster is created around it. */
  | "first"
  /** Further etcd / control-plane nodes: one at a time (etcd admits one learner), each after
   * the previous one's sync. */
  | "control-plane"
  /** Worker-only nodes: after the last control-plane sync, in parallel. */
  | "worker";

export interface PlannedRegistration {
  readonly node: NodeSpec;
  readonly step: RegistrationStep;
}

const ROLE_ORDER: readonly DownstreamRole[] = ["etcd", "controlplane", "worker"];

/** `--etcd --controlplane --worker`, in that order, as Rancher appends them. */
export function roleFlags(roles: readonly string[]): string[] {
  return ROLE_ORDER.filter((r) => roles.includes(r)).map((r) => `--${r}`);
}

const isControl = (roles: readonly string[]) =>
  roles.includes("etcd") || roles.includes("controlplane");

/** The RKE2 unit Rancher's plan starts on a node: what its registration waits for. */
export function rke2UnitFor(roles: readonly string[]): "rke2-server" | "rke2-agent" {
  return isControl(roles) ? "rke2-server" : "rke2-agent";
}

/**
 * The order nodes register in: the first node (in stack order) carrying both etcd and
 * controlplane, then the other etcd / control-plane nodes in stack order, then the workers.
 * Throws when no node carries both roles; validation reports that with the stack key first.
 */
export function registrationPlan(nodes: readonly NodeSpec[]): PlannedRegistration[] {
  const first = nodes.find((n) => n.roles.includes("etcd") && n.roles.includes("controlplane"));
  if (!first) {
    throw new Error(
      `no node of cluster ${nodes[0]?.cluster ?? "(none)"} has both roles etcd and controlplane; the first registered node must initialise the control plane.`,
    );
  }
  return [
    { node: first, step: "first" },
    ...nodes
      .filter((n) => n !== first && isControl(n.roles))
      .map((node) => ({ node, step: "control-plane" as const })),
    ...nodes.filter((n) => !isControl(n.roles)).map((node) => ({ node, step: "worker" as const })),
  ];
}

/**
 * The `--ca-checksum` Rancher's agent installer expects for a CA: the SHA-256 of the bytes
 * Rancher serves at <server>/cacerts (the installer saves them to a file and runs sha256sum),
 * so the stack must hold the CA exactly as served, trailing newline included.
 */
export function rancherCaChecksum(caCertificate: string): string {
  return createHash("sha256").update(caCertificate).digest("hex");
}

/** The `--ca-checksum` value a registration command carries, if any. */
export function caChecksumOf(command: string): string | undefined {
  return /--ca-checksum[= ]+'?([0-9a-fA-F]{64})'?/.exec(command)?.[1]?.toLowerCase();
}

/** The `--token` value a registration command carries, to keep it out of every message. */
export function tokenOf(command: string): string | undefined {
  return /--token[= ]+'?([^'\s]+)'?/.exec(command)?.[1];
}

/** Whether the command fetches the installer without verifying Rancher's certificate. */
export function skipsTlsVerification(command: string): boolean {
  return /\bcurl\b[^|]*\s(--insecure|-[a-zA-Z]*k[a-zA-Z]*)\b/.test(command);
}

/**
 * Why a registration command must not run, or undefined when it may. Never quotes the command:
 * it carries the cluster's registration token. `insecure` is the stack's opt-in to Rancher's
 * insecureNodeCommand, which fetches the installer without verifying Rancher's certificate.
 */
export function registrationCommandProblem(
  command: string,
  insecure: boolean,
  expectedChecksum: string | undefined,
): string | undefined {
  if (!insecure && skipsTlsVerification(command)) {
    return "the registration command skips TLS verification (curl --insecure), but the stack did not opt in with insecureRegistration";
  }
  const checksum = caChecksumOf(command);
  if (checksum === undefined) {
    return insecure
      ? undefined
      : "the registration command has no --ca-checksum, so the agent would trust any certificate; set Rancher's cacerts setting to the CA that signed its certificate";
  }
  if (expectedChecksum !== undefined && checksum !== expectedChecksum.toLowerCase()) {
    return `Rancher's registration command pins CA checksum ${checksum}, but rancher.caCertificate has checksum ${expectedChecksum}; set rancher.caCertificate to the CA exactly as Rancher serves it at /cacerts`;
  }
  return undefined;
}

/** Replaces every occurrence of the secrets in a text with "[secret]". */
export function redact(text: string, secrets: readonly (string | undefined)[]): string {
  return secrets
    .filter((s): s is string => typeof s === "string" && s.length >= 4)
    .reduce((t, s) => t.split(s).join("[secret]"), text);
}

/**
 * A registration command in the form Rancher's clusterRegistrationToken gives it (nodeCommand,
 * or insecureNodeCommand without the CA check). The offline verifier and the lab's Rancher
 * stand-ins answer with it, so they exercise the same checks as a real Rancher's command.
 */
export function rancherNodeCommand(options: {
  readonly serverUrl: string;
  readonly token: string;
  readonly caChecksum?: string;
  readonly insecure: boolean;
  /** The shell that runs the installer: `sudo  sh` as Rancher writes it; `sh` for root. */
  readonly shell?: string;
}): string {
  const curl = options.insecure ? "curl --insecure -fL" : "curl -fL";
  const checksum =
    !options.insecure && options.caChecksum ? ` --ca-checksum ${options.caChecksum}` : "";
  return (
    `${curl} ${options.serverUrl}/system-agent-install.sh | ${options.shell ?? "sudo  sh"} -s - ` +
    `--server ${options.serverUrl} --label 'cattle.io/os=linux' --token ${options.token}${checksum}`
  );
}
