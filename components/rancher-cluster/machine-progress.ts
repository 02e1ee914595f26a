/**
 * Whether Rancher has a registered machine, read from its plan secret the way
 * rancher-system-agent writes it (rancher/system-agent@v0.14.0 pkg/k8splan/watcher.go): the
 * planner's plan under `plan`; once the agent has applied it, `applied-checksum` is the hex
 * SHA-256 of exactly those plan bytes (pkg/applyinator/applyinator.go CalculatePlan, checksum);
 * a plan whose instructions failed has its checksum under `failed-checksum`, a `failure-count`
 * and under `failed-output` the saved output of its instructions (gzip of a JSON map of
 * instruction name to output bytes: pkg/applyinator/applyinator.go Apply); the agent retries it
 * after a 30 s cooldown until `failure-count` reaches the planner's `max-failures`. Rancher then
 * sets the machine's PlanApplied condition to an error, at once when `max-failures` is "-1"
 * (rancher/rancher@v2.14.3 pkg/controllers/capr/plansecret/plansecret.go: `maxFailures == "-1"
 * || failureCount == maxFailures`); the wait ends there too. The plan's probes report under `probe-statuses` as
 * `{"<probe>": {"healthy": true, ...}}` (pkg/prober/prober.go ProbeStatus) for the probes the
 * plan names (pkg/applyinator/applyinator.go Plan: `probes`, a map by name).
 */
import { createHash } from "crypto";
import { gunzipSync } from "zlib";

/** A machine the wait follows: its node and its plan secret, as the node's agent names it. */
export interface FollowedMachine {
  readonly node: string;
  readonly namespace: string;
  readonly secretName: string;
}

export interface MachineProgress {
  /** Planned, the plan applied as planned, every probe healthy. */
  readonly done: boolean;
  /** What is missing, in words; empty when done. */
  readonly missing: string;
  /** Set when Rancher counts the plan as failed for good: the wait ends with it. */
  readonly failed?: string;
}

/**
 * The last lines of each saved instruction output in `failed-output`, as "<name>: <lines>";
 * empty when none was saved or it cannot be read (the plan's failure is reported either way).
 */
function failedOutputOf(raw: Buffer | undefined): string {
  if (!raw || raw.length === 0) return "";
  try {
    const outputs = JSON.parse(gunzipSync(raw).toString("utf8")) as Record<string, unknown>;
    return Object.entries(outputs)
      .map(([name, value]) => {
        const text = typeof value === "string" ? Buffer.from(value, "base64").toString("utf8") : "";
        const tail = text
          .split("\n")
          .filter((l) => l.trim() !== "")
          .slice(-3)
          .join(" | ");
        return tail ? `${name}: ${tail.slice(-300)}` : "";
      })
      .filter((line) => line !== "")
      .join("; ");
  } catch {
    return "";
  }
}

const decode = (value: unknown): Buffer | undefined =>
  typeof value === "string" ? Buffer.from(value, "base64") : undefined;

/** What a plan secret (the body of GET /api/v1/namespaces/<ns>/secrets/<name>) says. */
export function machineProgress(secret: unknown): MachineProgress {
  const data = ((secret as { data?: unknown } | null)?.data ?? {}) as Record<string, unknown>;
  const plan = decode(data.plan);
  if (!plan || plan.length === 0) {
    return { done: false, missing: "Rancher's planner has not planned it yet" };
  }
  const checksum = createHash("sha256").update(plan).digest("hex");
  const applied = decode(data["applied-checksum"])?.toString("utf8") ?? "";
  const failed = decode(data["failed-checksum"])?.toString("utf8") ?? "";
  if (applied !== checksum) {
    if (failed === checksum) {
      const count = decode(data["failure-count"])?.toString("utf8") ?? "?";
      const max = decode(data["max-failures"])?.toString("utf8") ?? "";
      const output = failedOutputOf(decode(data["failed-output"]));
      const logs =
        "see journalctl -u rancher-system-agent and -u rke2-server or rke2-agent on the node";
      if (max === "-1" || count === max) {
        return {
          done: false,
          missing: "its agent failed to apply the plan",
          failed:
            `its agent failed to apply Rancher's plan ${count} time(s)` +
            (max === "-1"
              ? ", and the planner allows no failure"
              : `, the planner's limit (max-failures ${max})`) +
            `: Rancher marks the machine's plan as failed and retries no more${output ? ` (${output})` : ""}; ${logs}`,
        };
      }
      return {
        done: false,
        missing:
          `its agent failed to apply the plan (${count} failure(s)` +
          `${max ? ` of ${max} allowed` : ""}; it retries after 30 s${output ? `; ${output}` : ""}; ${logs})`,
      };
    }
    return {
      done: false,
      missing: applied
        ? "its agent has not applied Rancher's latest plan yet"
        : "its agent has not applied its plan yet",
    };
  }
  let probes: Record<string, { healthy?: boolean }> = {};
  const rawProbes = decode(data["probe-statuses"]);
  if (rawProbes && rawProbes.length > 0) {
    try {
      probes = JSON.parse(rawProbes.toString("utf8")) as typeof probes;
    } catch {
      return { done: false, missing: "its probe statuses are not JSON" };
    }
  }
  let planned: string[] = [];
  try {
    const parsed = JSON.parse(plan.toString("utf8")) as { probes?: unknown };
    if (typeof parsed.probes === "object" && parsed.probes !== null)
      planned = Object.keys(parsed.probes);
  } catch {
    return { done: false, missing: "its plan is not JSON" };
  }
  const unhealthy = [...new Set([...planned, ...Object.keys(probes)])]
    .filter((name) => probes[name]?.healthy !== true)
    .sort();
  if (unhealthy.length > 0) {
    return { done: false, missing: `probes not healthy yet: ${unhealthy.join(", ")}` };
  }
  return { done: true, missing: "" };
}
