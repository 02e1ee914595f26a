/**
 * The live check in front of the DNS egress NetworkPolicies: before `allow-dns-egress` goes into
 * a namespace, the namespace's NetworkPolicies, pods and workloads are read from the cluster,
 * and the policies are not created where they would isolate pods (running, or to come from a
 * workload's template) that nothing restricts yet (egress-isolation.ts decides).
 *
 * Why a dynamic resource that the NetworkPolicies depend on: its `create` and `update` run only
 * in `pulumi up`, so `pulumi preview` needs no cluster access; a refusal fails this resource and
 * Pulumi then creates none of the policies that depend on it; the kubeconfig stays a secret
 * input; and `read` checks again, so `preview --refresh` shows a namespace whose own egress
 * restriction was removed since. The kubernetes provider has no hook that reads other objects
 * before a create.
 *
 * Two readers of the same facts: the Kubernetes API through a kubeconfig (the management
 * cluster's `kubeconfig` secret, for `rke2.dnsDelivery: helmChartConfig`), and RKE2's own
 * kubectl on the first server over SSH (egress-facts.sh, for the server manifest).
 */
import * as pulumi from "@pulumi/pulumi";
import { DNS_EGRESS_CHECK, DnsPolicyNamespace } from "../model";
import { HostCheckState, hostCheckProvider } from "../ssh/host-check-provider";
import { HostProviderResource } from "../ssh/host-step-resource";
import { inputsDiffer } from "../ssh/run-script";
import { scriptText } from "../assets";
import { apiClientOf, apiGet, ApiClient } from "./kube-api";
import {
  dnsPolicyRefusal,
  LabelSelector,
  LiveNetworkPolicy,
  LivePod,
  LiveWorkload,
  NamespaceEgressFacts,
} from "./egress-isolation";

interface PodTemplate {
  metadata?: { labels?: Record<string, string> };
}

interface KubeObject {
  kind?: string;
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: {
    podSelector?: LabelSelector;
    policyTypes?: string[];
    egress?: unknown[];
    template?: PodTemplate;
    jobTemplate?: { spec?: { template?: PodTemplate } };
  };
  status?: { phase?: string; conditions?: { type?: string; status?: string }[] };
}

interface KubeList {
  kind?: string;
  items?: KubeObject[];
}

/**
 * The kinds whose controllers start pods from a template, with where each list is served: apps/v1
 * and batch/v1 (kubernetes/kubernetes@v1.35.4 pkg/apis/apps/types.go, pkg/apis/batch/types.go).
 * A CronJob's pods come from `spec.jobTemplate.spec.template`, the others' from `spec.template`.
 */
export const WORKLOAD_LISTS: readonly { kind: string; path: string }[] = [
  { kind: "Deployment", path: "/apis/apps/v1/namespaces/NS/deployments" },
  { kind: "StatefulSet", path: "/apis/apps/v1/namespaces/NS/statefulsets" },
  { kind: "DaemonSet", path: "/apis/apps/v1/namespaces/NS/daemonsets" },
  { kind: "Job", path: "/apis/batch/v1/namespaces/NS/jobs" },
  { kind: "CronJob", path: "/apis/batch/v1/namespaces/NS/cronjobs" },
];

/**
 * A Job whose `Complete` or `Failed` condition is True starts no pod again
 * (kubernetes/kubernetes@v1.35.4 pkg/apis/batch/types.go, JobComplete and JobFailed).
 */
function jobFinished(job: KubeObject): boolean {
  return (job.status?.conditions ?? []).some(
    (c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True",
  );
}

/**
 * The workloads of a list the API or kubectl returns. Items of a typed list carry no `kind` of
 * their own (the list's kind names it, `DeploymentList`), those of kubectl's mixed `List` do.
 */
export function workloadsOf(list: KubeList): LiveWorkload[] {
  const listKind = list.kind?.endsWith("List") ? list.kind.slice(0, -4) : undefined;
  return (list.items ?? []).map((item): LiveWorkload => {
    const kind = item.kind ?? listKind ?? "";
    const template =
      kind === "CronJob" ? item.spec?.jobTemplate?.spec?.template : item.spec?.template;
    return {
      kind,
      name: item.metadata?.name ?? "",
      templateLabels: template?.metadata?.labels ?? {},
      ...(kind === "Job" && jobFinished(item) ? { finished: true } : {}),
    };
  });
}

/** The facts of one namespace from the API's NetworkPolicyList, PodList and workload lists. */
export function namespaceFacts(
  namespace: string,
  exists: boolean,
  policies: KubeList,
  pods: KubeList,
  workloads: readonly KubeList[] = [],
): NamespaceEgressFacts {
  return {
    namespace,
    exists,
    policies: (policies.items ?? []).map((p): LiveNetworkPolicy => ({
      name: p.metadata?.name ?? "",
      podSelector: p.spec?.podSelector,
      policyTypes: p.spec?.policyTypes,
      egress: p.spec?.egress,
    })),
    pods: (pods.items ?? []).map((p): LivePod => ({
      name: p.metadata?.name ?? "",
      labels: p.metadata?.labels ?? {},
      phase: p.status?.phase,
    })),
    workloads: workloads.flatMap(workloadsOf),
  };
}

/** Refusals for every listed namespace; empty when the allowance may go everywhere. */
export function refusalsOf(
  facts: readonly NamespaceEgressFacts[],
  namespaces: readonly DnsPolicyNamespace[],
  where: string,
): string[] {
  return namespaces
    .map((target) => {
      const found = facts.find((f) => f.namespace === target.name);
      if (!found)
        return `namespace ${target.name} on ${where}: its policies, pods and workloads were not read.`;
      return dnsPolicyRefusal(found, target, where);
    })
    .filter((m): m is string => m !== undefined);
}

function failure(refusals: readonly string[]): string {
  return `the DNS egress NetworkPolicy was not created:\n  - ${refusals.join("\n  - ")}`;
}

// --- the Kubernetes API through a kubeconfig -------------------------------------------------

async function apiList(client: ApiClient, path: string): Promise<KubeList> {
  const r = await apiGet(client, path);
  if (r.status !== 200) {
    const message = (JSON.parse(r.body || "{}") as { message?: string }).message ?? r.body;
    throw new Error(`GET ${path} answered ${r.status}: ${message}`);
  }
  return JSON.parse(r.body) as KubeList;
}

/** A namespace's NetworkPolicies, pods and workloads, read through the API. */
export async function readNamespaceFacts(
  kubeconfig: string,
  namespace: string,
): Promise<NamespaceEgressFacts> {
  const client = apiClientOf(kubeconfig);
  const ns = encodeURIComponent(namespace);
  const found = await apiGet(client, `/api/v1/namespaces/${ns}`);
  if (found.status === 404) return namespaceFacts(namespace, false, {}, {});
  if (found.status !== 200) {
    throw new Error(`GET /api/v1/namespaces/${ns} answered ${found.status}`);
  }
  return namespaceFacts(
    namespace,
    true,
    await apiList(client, `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`),
    await apiList(client, `/api/v1/namespaces/${ns}/pods`),
    await Promise.all(WORKLOAD_LISTS.map((w) => apiList(client, w.path.replace("NS", ns)))),
  );
}

export interface KubeEgressCheckState {
  readonly cluster: string;
  readonly kubeconfig: string;
  readonly namespaces: readonly DnsPolicyNamespace[];
  /** What the last check refused; empty when the allowance may go into every namespace. */
  readonly refusals: readonly string[];
}

function where(state: KubeEgressCheckState): string {
  let server = "";
  try {
    server = ` (${apiClientOf(state.kubeconfig).server.host})`;
  } catch {
    // The check itself reports a kubeconfig it cannot use.
  }
  return `cluster ${state.cluster}${server}`;
}

async function kubeRefusals(state: KubeEgressCheckState): Promise<string[]> {
  const facts: NamespaceEgressFacts[] = [];
  for (const target of state.namespaces) {
    facts.push(await readNamespaceFacts(state.kubeconfig, target.name));
  }
  return refusalsOf(facts, state.namespaces, where(state));
}

export const kubeEgressCheckProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: KubeEgressCheckState, news: KubeEgressCheckState) {
    const keys: (keyof KubeEgressCheckState)[] = ["cluster", "kubeconfig", "namespaces"];
    return { changes: olds.refusals.length > 0 || inputsDiffer(olds, news, keys) };
  },
  async create(inputs: KubeEgressCheckState) {
    const refusals = await kubeRefusals(inputs);
    if (refusals.length > 0) throw new Error(failure(refusals));
    return { id: `${inputs.cluster}/dns-egress-check`, outs: { ...inputs, refusals: [] } };
  },
  async read(id: string, props: KubeEgressCheckState) {
    return { id, props: { ...props, refusals: await kubeRefusals(props) } };
  },
  async update(_id: string, _olds: KubeEgressCheckState, news: KubeEgressCheckState) {
    const refusals = await kubeRefusals(news);
    if (refusals.length > 0) throw new Error(failure(refusals));
    return { outs: { ...news, refusals: [] } };
  },
  async delete() {},
};

export interface KubeEgressCheckArgs {
  readonly cluster: string;
  readonly kubeconfig: pulumi.Input<string>;
  readonly namespaces: readonly DnsPolicyNamespace[];
}

/** The check through the Kubernetes API; the NetworkPolicies depend on it. */
export class KubeEgressCheck extends HostProviderResource {
  declare readonly refusals: pulumi.Output<string[]>;

  constructor(name: string, args: KubeEgressCheckArgs, opts: pulumi.CustomResourceOptions) {
    super(
      "kubeEgressCheck",
      DNS_EGRESS_CHECK,
      name,
      {
        cluster: args.cluster,
        kubeconfig: pulumi.secret(args.kubeconfig),
        namespaces: args.namespaces.map((n) => ({ name: n.name, isolate: n.isolate })),
        refusals: [],
      },
      { ...opts, additionalSecretOutputs: ["kubeconfig"] },
    );
  }
}

// --- RKE2's kubectl on the first server -------------------------------------------------------

export interface SshEgressCheckState extends HostCheckState {
  readonly namespaces: readonly DnsPolicyNamespace[];
  /** rke2-facts.sh, which finds RKE2's data-dir there (its kubectl is under it); older state has none. */
  readonly rke2FactsScript?: string;
  /** What the last check refused; empty when the allowance may go into every namespace. */
  readonly refusals: readonly string[];
}

/**
 * The facts egress-facts.sh prints: `not-running` before RKE2's apiserver answers on the server
 * (a cluster that has not started has no NetworkPolicy and no namespace but its defaults), else
 * per namespace one line `<namespace> <exists 0|1> <policies JSON> <pods JSON> <workloads JSON>`
 * (the workloads as kubectl's `List` of every kind in WORKLOAD_LISTS).
 */
export function factsFromScript(
  stdout: string,
  namespaces: readonly DnsPolicyNamespace[],
): NamespaceEgressFacts[] {
  const lines = stdout.split("\n").filter(Boolean);
  if (lines.includes("not-running")) {
    // kube-apiserver creates default, kube-system, kube-public and kube-node-lease itself
    // (kubernetes/kubernetes@v1.35.4 pkg/controlplane/controller/systemnamespaces).
    const initial = ["default", "kube-system", "kube-public", "kube-node-lease"];
    return namespaces.map((n) => namespaceFacts(n.name, initial.includes(n.name), {}, {}));
  }
  return lines.map((line) => {
    const [namespace, exists, policies, pods, workloads] = line.split("\t");
    return namespaceFacts(
      namespace,
      exists === "1",
      JSON.parse(policies || "{}") as KubeList,
      JSON.parse(pods || "{}") as KubeList,
      [JSON.parse(workloads || "{}") as KubeList],
    );
  });
}

export const sshEgressCheckProvider = hostCheckProvider<SshEgressCheckState>({
  label: (state) => `DNS egress check on ${state.node}`,
  findingsKey: "refusals",
  inputs: ["namespaces", "rke2FactsScript"],
  params: (state) => ({
    NAMESPACES: state.namespaces.map((n) => n.name).join(" "),
    RKE2_FACTS_SCRIPT: state.rke2FactsScript
      ? scriptText(state.rke2FactsScript, `node ${state.node}`)
      : "",
  }),
  timeoutMs: 60000,
  findings: (stdout, state) =>
    refusalsOf(
      factsFromScript(stdout, state.namespaces),
      state.namespaces,
      `the cluster of ${state.node}`,
    ),
  failure: (_state, refusals) => failure(refusals),
  id: (state) => `${state.node}/dns-egress-check`,
});
