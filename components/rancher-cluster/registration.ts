/**
 * Pure pieces of registering nodes into a Rancher downstream custom cluster: the order, the
 * role flags, the CA checksum, and the parsing and checks of Rancher's node command.
 */
import { createHash } from "crypto";
import { DownstreamRole, NodeSpec } from "../model";

/**
 * Where a node stands in the registration order. Rancher's planner decides who gets a plan
 * (rancher/rancher@v2.14.3 pkg/capr/planner/planner.go):
 * - `clusterIsSane`: no machine gets any plan until at least one etcd, one controlplane and one
 *   worker machine are registered ("waiting for at least one control plane, etcd, and worker
 *   node to be registered"), so those register together, without waiting for a plan;
 * - `electInitNode` (initnode.go): the init node is the etcd machine with the smallest machine
 *   name among those present; with one etcd node in the first group, it is that node;
 * - `reconcile`: a new machine gets its first plan at once, whatever the concurrency settings,
 *   so several etcd nodes registered together join etcd together and RKE2 retries on etcd's
 *   one-learner limit (seed 003). Each further etcd node registers alone, after a sync.
 */
export type RegistrationGroup =
  /** One etcd node (the init node), a controlplane node, a worker: registered together. */
  | "first"
  /** A further etcd node: alone, followed by the join gate on it and a sync. */
  | "etcd"
  /** A further control-plane node without etcd: alone, followed by a sync. */
  | "control-plane"
  /** The remaining workers: in parallel after the last sync, followed by a last sync. */
  | "worker";

export interface PlannedRegistration {
  readonly node: NodeSpec;
  readonly group: RegistrationGroup;
  /** 1-based position in the order; registrations with the same step run in parallel. */
  readonly step: number;
}

const ROLE_ORDER: readonly DownstreamRole[] = ["etcd", "controlplane", "worker"];

/** `--etcd --controlplane --worker`, in that order, as Rancher appends them. */
export function roleFlags(roles: readonly string[]): string[] {
  return ROLE_ORDER.filter((r) => roles.includes(r)).map((r) => `--${r}`);
}

const has = (role: DownstreamRole) => (n: NodeSpec) => n.roles.includes(role);

/**
 * The roles a downstream cluster lacks for Rancher's planner to start (clusterIsSane): at least
 * one etcd, one controlplane and one worker node.
 */
export function missingRoles(nodes: readonly NodeSpec[]): DownstreamRole[] {
  return ROLE_ORDER.filter((role) => !nodes.some(has(role)));
}

/**
 * The order nodes register in (see RegistrationGroup). The init node is the first node in stack
 * order with etcd and controlplane, else the first etcd node; the first group adds the first
 * controlplane node without etcd when the init node lacks controlplane, and the first worker
 * without etcd when neither carries worker. Throws, naming the cluster, when no such group exists;
 * validation reports the missing roles with the stack key first.
 */
export function registrationPlan(nodes: readonly NodeSpec[]): PlannedRegistration[] {
  const cluster = nodes[0]?.cluster ?? "(none)";
  const missing = missingRoles(nodes);
  if (missing.length > 0) {
    throw new Error(
      `cluster ${cluster} has no node with role ${missing.join(", ")}; Rancher delivers no plan to any node until an etcd, a controlplane and a worker node are registered.`,
    );
  }
  const noEtcd = (n: NodeSpec) => !n.roles.includes("etcd");
  const init =
    nodes.find((n) => has("etcd")(n) && has("controlplane")(n)) ?? nodes.find(has("etcd"))!;
  const first: NodeSpec[] = [init];
  if (!has("controlplane")(init)) {
    const cp = nodes.find((n) => has("controlplane")(n) && noEtcd(n));
    if (!cp) throw new Error(firstGroupError(cluster, "controlplane"));
    first.push(cp);
  }
  if (!first.some(has("worker"))) {
    const worker = nodes.find((n) => has("worker")(n) && noEtcd(n) && !first.includes(n));
    if (!worker) throw new Error(firstGroupError(cluster, "worker"));
    first.push(worker);
  }
  const rest = nodes.filter((n) => !first.includes(n));
  const plan: PlannedRegistration[] = first.map((node) => ({ node, group: "first", step: 1 }));
  let step = 1;
  for (const node of rest.filter(has("etcd"))) plan.push({ node, group: "etcd", step: ++step });
  for (const node of rest.filter((n) => noEtcd(n) && has("controlplane")(n))) {
    plan.push({ node, group: "control-plane", step: ++step });
  }
  const workers = rest.filter((n) => noEtcd(n) && !has("controlplane")(n));
  if (workers.length > 0) step++;
  for (const node of workers) plan.push({ node, group: "worker", step });
  return plan;
}

function firstGroupError(cluster: string, role: DownstreamRole): string {
  return `cluster ${cluster} has no ${role} node without etcd to register beside the init node; Rancher starts only when an etcd, a controlplane and a worker node are registered, and a second etcd node in that first group would join etcd at the same time as the first. Give one node the ${role} role without etcd.`;
}

/** What the registration plan renders for review: each step, in order, and what it waits for. */
export interface RegistrationPlanEntry {
  readonly step: number;
  readonly node: string;
  readonly roles: readonly string[];
  readonly waitsFor: {
    /** What must be true before the registration starts. */
    readonly before: readonly string[];
    /** What is waited for after it, before the next step starts. */
    readonly after: readonly string[];
  };
}

/** The rendered registration plan of a cluster (`rancher/<cluster>/registration-plan.json`). */
export function registrationPlanDocument(
  clusterName: string,
  nodes: readonly NodeSpec[],
  caChecksum: string | undefined,
): { cluster: string; caChecksum: string | null; steps: RegistrationPlanEntry[] } {
  const plan = registrationPlan(nodes);
  const namesAt = (step: number) =>
    plan
      .filter((q) => q.step === step)
      .map((q) => q.node.name)
      .join(", ");
  const steps = plan.map((p): RegistrationPlanEntry => {
    const before = [`cluster ${clusterName} created in Rancher`, `${p.node.name} prepared`];
    if (p.step > 1) before.push(`cluster active after ${namesAt(p.step - 1)} (ClusterSync)`);
    const after = [`rancher-system-agent running on ${p.node.name}`];
    switch (p.group) {
      case "first":
        after.push(
          `with ${namesAt(1)} registered: Rancher plans the init node ${plan[0].node.name}, then the control plane, ` +
            "waits for the cluster agent, then plans the workers; the cluster active (ClusterSync)",
        );
        break;
      case "etcd":
        after.push(
          `${p.node.name} a voting etcd member, no learner in etcd (join gate)`,
          "cluster active (ClusterSync)",
        );
        break;
      case "control-plane":
        after.push("cluster active (ClusterSync)");
        break;
      case "worker":
        after.push("cluster active, every node in sync (ClusterSync)");
        break;
      default: {
        const unknown: never = p.group;
        throw new Error(`unknown registration group ${String(unknown)}`);
      }
    }
    return {
      step: p.step,
      node: p.node.name,
      roles: [...p.node.roles],
      waitsFor: { before, after },
    };
  });
  return { cluster: clusterName, caChecksum: caChecksum ?? null, steps };
}

/**
 * The `--ca-checksum` Rancher puts in its node command, computed as Rancher computes it:
 * rancher/rancher@v2.14.3 pkg/systemtemplate/import.go (CAChecksum) hashes the `cacerts`
 * setting with "\n" appended when it does not end in one, which is what /cacerts serves and what
 * the installer's `sha256sum` of the downloaded file gives.
 */
export function rancherCaChecksum(caCertificate: string): string {
  const served = caCertificate.endsWith("\n") ? caCertificate : `${caCertificate}\n`;
  return createHash("sha256").update(served).digest("hex");
}

/** The parts of Rancher's node command the registration uses; `token` is a secret. */
export interface ParsedNodeCommand {
  /** `<server>/system-agent-install.sh` */
  readonly installerUrl: string;
  readonly server: string;
  readonly token: string;
  readonly caChecksum?: string;
  /** Whether the installer is fetched with `curl --insecure`. */
  readonly insecure: boolean;
}

/**
 * Parses Rancher's node command, in the form rancher/rancher@v2.14.3
 * pkg/controllers/dashboard/clusterregistrationtoken/status.go gives it
 * (provisioningV2NodeCommandFormat and provisioningV2InsecureNodeCommandFormat):
 *   `<agent env vars> curl [--insecure] -fL <server>/system-agent-install.sh | sudo <agent env vars>
 *    sh -s - --server <server> --label 'cattle.io/os=linux' --token <token>[ --ca-checksum <sum>]`
 * The agent env vars are empty unless the cluster sets agentEnvVars, which this product does not.
 * Returns a reason, never quoting the command (it carries the token), when the shape differs.
 */
export function parseNodeCommand(command: string): ParsedNodeCommand | { problem: string } {
  const m =
    /^\s*curl (--insecure )?-fL (https:\/\/\S+)\/system-agent-install\.sh \| (?:sudo\s+)?sh -s - --server (https:\/\/\S+) --label 'cattle\.io\/os=linux' --token (\S+?)(?: --ca-checksum ([0-9a-f]{64}))?\s*$/.exec(
      command,
    );
  if (!m) {
    return {
      problem:
        "Rancher's registration command does not have the shape Rancher v2.14 gives it (curl -fL <server>/system-agent-install.sh | sudo sh -s - --server <server> --label 'cattle.io/os=linux' --token <token> [--ca-checksum <sha256>], no agent environment variables)",
    };
  }
  const [, insecure, installerServer, server, token, caChecksum] = m;
  if (installerServer !== server) {
    return {
      problem: `Rancher's registration command fetches the installer from ${installerServer} but registers with ${server}`,
    };
  }
  return {
    installerUrl: `${installerServer}/system-agent-install.sh`,
    server,
    token,
    caChecksum,
    insecure: insecure !== undefined,
  };
}

/** The `--ca-checksum` value any command carries, if any (policies read arbitrary commands). */
export function caChecksumOf(command: string): string | undefined {
  return /--ca-checksum[= ]+'?([0-9a-fA-F]{64})'?/.exec(command)?.[1]?.toLowerCase();
}

/** Whether a command fetches the installer without verifying Rancher's certificate. */
export function skipsTlsVerification(command: string): boolean {
  return /\bcurl\b[^|]*\s(--insecure|-[a-zA-Z]*k[a-zA-Z]*)\b/.test(command);
}

/** The `--token` value a registration command carries, to keep it out of every message. */
export function tokenOf(command: string): string | undefined {
  return /--token[= ]+'?([^'\s]+)'?/.exec(command)?.[1];
}

const sameUrl = (a: string, b: string) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "");

/**
 * The parsed command, or why it must not run. Never quotes the command: it carries the
 * cluster's registration token. `insecure` is the stack's opt-in to Rancher's
 * insecureNodeCommand, which fetches the installer without verifying Rancher's certificate.
 */
export function checkNodeCommand(
  command: string,
  expected: { rancherUrl: string; insecure: boolean; caChecksum: string | undefined },
): ParsedNodeCommand | { problem: string } {
  const parsed = parseNodeCommand(command);
  if ("problem" in parsed) return parsed;
  if (!sameUrl(parsed.server, expected.rancherUrl)) {
    return {
      problem: `Rancher's registration command registers with ${parsed.server}, but rancher.url is ${expected.rancherUrl}; set rancher.url to Rancher's server-url setting`,
    };
  }
  if (!expected.insecure && parsed.insecure) {
    return {
      problem:
        "the registration command skips TLS verification (curl --insecure), but the stack did not opt in with insecureRegistration",
    };
  }
  if (parsed.caChecksum === undefined) {
    return expected.insecure
      ? parsed
      : {
          problem:
            "the registration command has no --ca-checksum, so the agent would trust any certificate; set Rancher's cacerts setting to the CA that signed its certificate",
        };
  }
  if (expected.caChecksum !== undefined && parsed.caChecksum !== expected.caChecksum) {
    return {
      problem: `Rancher's registration command pins CA checksum ${parsed.caChecksum}, but rancher.caCertificate has checksum ${expected.caChecksum}; set rancher.caCertificate to the CA exactly as Rancher serves it at /cacerts`,
    };
  }
  return parsed;
}

/** Replaces every occurrence of the secrets in a text with "[secret]". */
export function redact(text: string, secrets: readonly (string | undefined)[]): string {
  return secrets
    .filter((s): s is string => typeof s === "string" && s.length >= 4)
    .reduce((t, s) => withoutPrefixes(t.split(s).join("[secret]"), s), text);
}

/** The shortest start of a secret that is taken for the secret (Rancher's agent logs half). */
const SECRET_PREFIX = 8;

/**
 * `text` with every run that starts a secret for SECRET_PREFIX characters or more replaced: the
 * cluster agent logs the first half of its token (rancher/rancher@v2.14.3 cmd/agent/main.go,
 * "token starting with"), and a prefix tells an attacker that much of the token.
 */
function withoutPrefixes(text: string, secret: string): string {
  if (secret.length < SECRET_PREFIX) return text;
  const start = secret.slice(0, SECRET_PREFIX);
  let out = "";
  let from = 0;
  for (let at = text.indexOf(start); at >= 0; at = text.indexOf(start, from)) {
    let end = at + SECRET_PREFIX;
    while (end < text.length && end - at < secret.length && text[end] === secret[end - at]) end++;
    out += `${text.slice(from, at)}[secret]`;
    from = end;
  }
  return out + text.slice(from);
}
