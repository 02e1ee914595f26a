/**
 * The rolling order in which a version or config.yaml change reaches an RKE2 cluster, for
 * review before `pulumi up`: servers one at a time in join order, each behind its join gate,
 * then agents (RKE2's upgrade order). Pure: compares the configs and release of this render with
 * those of an earlier render (the previous restart-plan.json), so a reviewer sees which nodes
 * would restart. Token changes do not show: render redacts the token.
 */
import * as crypto from "crypto";

export interface PlannedNode {
  readonly node: string;
  readonly role: "server" | "agent";
  /** The rendered config.yaml (token redacted). */
  readonly config: string;
}

export interface RestartPlanStep {
  readonly order: number;
  readonly node: string;
  readonly role: "server" | "agent";
  readonly configSha256: string;
  /** true/false against the earlier render; null when there is none to compare with. */
  readonly restarts: boolean | null;
  readonly because: readonly string[];
  /** What must pass before this node's step starts. */
  readonly after: string;
}

export interface RestartPlan {
  readonly cluster: string;
  readonly version: string;
  readonly previousVersion: string | null;
  readonly steps: readonly RestartPlanStep[];
}

export function restartPlan(
  cluster: string,
  version: string,
  nodes: readonly PlannedNode[],
  previous?: RestartPlan,
): RestartPlan {
  const servers = nodes.filter((n) => n.role === "server");
  const agents = nodes.filter((n) => n.role === "agent");
  const lastServer = servers[servers.length - 1]?.node;
  const steps = [...servers, ...agents].map((n, i): RestartPlanStep => {
    const configSha256 = crypto.createHash("sha256").update(n.config).digest("hex");
    const before = previous?.steps.find((s) => s.node === n.node);
    const because: string[] = [];
    if (previous && previous.version !== version)
      because.push(`version ${previous.version} -> ${version}`);
    if (before && before.configSha256 !== configSha256) because.push("config.yaml changed");
    const after =
      n.role === "agent"
        ? `join gate of ${lastServer}`
        : i === 0
          ? "its node preparation"
          : `join gate of ${servers[i - 1].node}`;
    return {
      order: i + 1,
      node: n.node,
      role: n.role,
      configSha256,
      restarts: previous ? (before ? because.length > 0 : false) : null,
      because: previous && !before ? ["new node: installed and started, not restarted"] : because,
      after,
    };
  });
  return { cluster, version, previousVersion: previous?.version ?? null, steps };
}
