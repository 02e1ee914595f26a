/**
 * Whether the DNS egress policy is an allowance or a default-deny in a namespace, decided from
 * the namespace's live NetworkPolicies, its pods and the pod templates of its workloads (seed
 * 001's policy is meant for namespaces whose egress is already restricted; a CronJob's next pod
 * counts as much as a running one).
 *
 * A NetworkPolicy that selects a pod and relates to egress makes that pod deny every egress that
 * no policy selecting it allows: "Outgoing traffic is allowed if there are no NetworkPolicies
 * selecting the pod ..., OR if the traffic matches at least one egress rule across all of the
 * NetworkPolicy objects whose podSelector matches the pod" (kubernetes/kubernetes@v1.35.4
 * pkg/apis/networking/types.go, NetworkPolicySpec.Egress). `allow-dns-egress` selects every pod
 * (`podSelector: {}`) with `policyTypes: [Egress]`, so in a namespace where nothing restricts
 * egress yet, it cuts every pod off from everything but DNS.
 */

import type { DnsPolicyNamespace } from "../model";

/** The name of the DNS egress NetworkPolicy this project delivers. */
export const DNS_EGRESS_POLICY_NAME = "allow-dns-egress";

/**
 * Rancher's system namespaces (rancher/rancher@v2.14.3 pkg/settings/setting.go,
 * `systemNamespaces`): Rancher, Fleet, the impersonation service accounts and the cluster
 * tooling run there and must reach Rancher, the Kubernetes API and each other.
 */
export const RANCHER_SYSTEM_NAMESPACES: readonly string[] = [
  "kube-system",
  "kube-public",
  "cattle-system",
  "cattle-alerting",
  "cattle-logging",
  "cattle-prometheus",
  "ingress-nginx",
  "cattle-global-data",
  "cattle-istio",
  "kube-node-lease",
  "cert-manager",
  "cattle-global-nt",
  "security-scan",
  "cattle-fleet-system",
  "cattle-fleet-local-system",
  "calico-system",
  "tigera-operator",
  "cattle-impersonation-system",
  "rancher-operator-system",
  "cattle-csp-adapter-system",
  "calico-apiserver",
  "cattle-elemental-system",
  "cattle-scc-system",
  "cattle-telemetry-system",
  "cattle-local-user-passwords",
  "cattle-tokens",
  "cattle-oidc-codes",
  "cattle-oidc-client-secrets",
];

/**
 * RKE2's own namespaces: every packaged HelmChart, CoreDNS among them, installs into
 * kube-system (rancher/rke2@v1.35.7+rke2r1 charts/build-chart.sh, `CHART_NAMESPACE` default);
 * the Calico operator runs in tigera-operator (exempted from Pod Security in
 * pkg/rke2/psa.go) and Calico itself in calico-system (pkg/windows/calico.go,
 * `CalicoSystemNamespace`). CoreDNS in kube-system must reach its upstream resolvers.
 */
export const RKE2_SYSTEM_NAMESPACES: readonly string[] = [
  "kube-system",
  "tigera-operator",
  "calico-system",
];

/** Who owns a namespace that can never become default-deny egress, or undefined. */
export function systemNamespaceOwner(namespace: string): "Rancher" | "RKE2" | undefined {
  if (RKE2_SYSTEM_NAMESPACES.includes(namespace)) return "RKE2";
  if (RANCHER_SYSTEM_NAMESPACES.includes(namespace)) return "Rancher";
  return undefined;
}

/** metav1.LabelSelector as the API returns it. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: string;
    readonly values?: readonly string[];
  }[];
}

/** The parts of a live NetworkPolicy that decide whom it isolates for egress. */
export interface LiveNetworkPolicy {
  readonly name: string;
  readonly podSelector?: LabelSelector;
  readonly policyTypes?: readonly string[];
  readonly egress?: readonly unknown[];
}

export interface LivePod {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Pod phase; pods that finished (Succeeded, Failed) send nothing. */
  readonly phase?: string;
}

/**
 * A workload whose controller starts pods from a template: the pods to come carry the template's
 * labels (a Deployment's ReplicaSets add `pod-template-hash`, a Job adds its `job-name` and
 * controller-uid labels; added labels can only widen what a policy's matchLabels selects).
 */
export interface LiveWorkload {
  /** Deployment, StatefulSet, DaemonSet, Job or CronJob. */
  readonly kind: string;
  readonly name: string;
  /** The pod template's labels (a CronJob's: its jobTemplate's pod template). */
  readonly templateLabels: Readonly<Record<string, string>>;
  /** A Job that completed or failed starts no pod again. */
  readonly finished?: boolean;
}

/** What the cluster holds in one namespace. */
export interface NamespaceEgressFacts {
  readonly namespace: string;
  readonly exists: boolean;
  readonly policies: readonly LiveNetworkPolicy[];
  readonly pods: readonly LivePod[];
  /** The workloads whose pods are still to come (a CronJob's next run, a scaled-up Deployment). */
  readonly workloads: readonly LiveWorkload[];
}

/**
 * Standard label selector semantics (kubernetes/apimachinery@v0.35.4
 * pkg/apis/meta/v1/helpers.go LabelSelectorAsSelector, pkg/labels/selector.go Matches): an
 * empty selector selects everything; matchLabels and matchExpressions are ANDed; NotIn and
 * DoesNotExist hold for a pod without the key. An unknown operator selects nothing.
 */
export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  const has = (key: string) => Object.prototype.hasOwnProperty.call(labels, key);
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    if (!has(key) || labels[key] !== value) return false;
  }
  for (const e of selector?.matchExpressions ?? []) {
    const values = e.values ?? [];
    switch (e.operator) {
      case "In":
        if (!has(e.key) || !values.includes(labels[e.key])) return false;
        break;
      case "NotIn":
        if (has(e.key) && values.includes(labels[e.key])) return false;
        break;
      case "Exists":
        if (!has(e.key)) return false;
        break;
      case "DoesNotExist":
        if (has(e.key)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/**
 * Whether a policy relates to egress: `policyTypes` names Egress, or, where policyTypes is not
 * set, the policy has egress rules (kubernetes/kubernetes@v1.35.4 pkg/apis/networking/types.go
 * NetworkPolicySpec.PolicyTypes; the API server sets it that way on create,
 * pkg/apis/networking/v1/defaults.go SetDefaults_NetworkPolicy).
 */
export function relatesToEgress(policy: LiveNetworkPolicy): boolean {
  if (policy.policyTypes && policy.policyTypes.length > 0) {
    return policy.policyTypes.includes("Egress");
  }
  return (policy.egress ?? []).length > 0;
}

export interface EgressIsolation {
  /** Policies, other than ours, that isolate some pods of the namespace for egress. */
  readonly restrictingPolicies: readonly string[];
  /** Running pods that no such policy selects: ours would cut them off from all but DNS. */
  readonly unrestrictedPods: readonly string[];
  /** Workloads (`CronJob/report`) whose pod template no such policy selects: their next pods. */
  readonly unrestrictedWorkloads: readonly string[];
}

/**
 * Which pods of a namespace, running or still to come from its workloads' templates, are
 * already isolated for egress by someone else's policy.
 */
export function egressIsolationOf(facts: NamespaceEgressFacts): EgressIsolation {
  const restricting = facts.policies.filter(
    (p) => p.name !== DNS_EGRESS_POLICY_NAME && relatesToEgress(p),
  );
  const restricted = (labels: Readonly<Record<string, string>>) =>
    restricting.some((p) => selectorMatches(p.podSelector, labels));
  const unrestrictedPods = facts.pods
    .filter((pod) => pod.phase !== "Succeeded" && pod.phase !== "Failed")
    .filter((pod) => !restricted(pod.labels))
    .map((pod) => pod.name)
    .sort();
  const unrestrictedWorkloads = facts.workloads
    .filter((w) => !w.finished && !restricted(w.templateLabels))
    .map((w) => `${w.kind}/${w.name}`)
    .sort();
  return {
    restrictingPolicies: restricting.map((p) => p.name).sort(),
    unrestrictedPods,
    unrestrictedWorkloads,
  };
}

/** The stack key of the namespace list, for messages. */
export const POLICY_NAMESPACES_KEY = "rke2-remediation:dns.policyNamespaces";

/**
 * Why the DNS egress policy must not go into a namespace, or undefined when it may: the
 * namespace is missing, or the policy would isolate pods that nothing restricts yet (every pod
 * to come as well, when no policy there relates to egress) and the stack did not opt in.
 */
export function dnsPolicyRefusal(
  facts: NamespaceEgressFacts,
  target: DnsPolicyNamespace,
  where: string,
): string | undefined {
  const ns = facts.namespace;
  const entry = `the ${POLICY_NAMESPACES_KEY} entry "${ns}"`;
  if (!facts.exists) {
    return (
      `namespace ${ns} does not exist on ${where}; ${DNS_EGRESS_POLICY_NAME} cannot go into it. ` +
      `Create the namespace with its own egress policy first, or remove ${entry}.`
    );
  }
  if (target.isolate) return undefined;
  const { restrictingPolicies, unrestrictedPods, unrestrictedWorkloads } = egressIsolationOf(facts);
  if (
    restrictingPolicies.length > 0 &&
    unrestrictedPods.length === 0 &&
    unrestrictedWorkloads.length === 0
  ) {
    return undefined;
  }
  const whom = [
    ...(unrestrictedPods.length > 0 ? [`pod(s) ${unrestrictedPods.join(", ")}`] : []),
    ...(unrestrictedWorkloads.length > 0
      ? [`the pods of ${unrestrictedWorkloads.join(", ")}`]
      : []),
  ];
  const cutOff =
    whom.length > 0
      ? `would cut ${whom.join(" and ")} off from everything but DNS`
      : "would cut every pod started there off from everything but DNS (no pod runs there now)";
  const found =
    restrictingPolicies.length > 0
      ? `the egress policies there (${restrictingPolicies.join(", ")}) do not select every pod or pod template`
      : "no NetworkPolicy there restricts egress";
  return (
    `namespace ${ns} on ${where}: ${found}, so ${DNS_EGRESS_POLICY_NAME} (every pod, policyTypes Egress) ` +
    `${cutOff}: a NetworkPolicy that selects a pod denies all egress no policy allows (seed 001's ` +
    `policy is an allowance for namespaces that already restrict egress). Restrict the namespace's ` +
    `egress with its own policy first, or remove ${entry}` +
    (systemNamespaceOwner(ns)
      ? ` (${ns} is ${systemNamespaceOwner(ns)}'s own namespace and can never be isolated).`
      : `, or opt in with isolate: true on that entry (the namespace becomes default-deny egress except DNS).`)
  );
}
