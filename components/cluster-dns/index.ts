/**
 * The cluster DNS fix for one cluster (seeds 000, 001, 004), delivered one of three ways:
 *   - helmChartConfig:   a HelmChartConfig `rke2-coredns` in kube-system through @pulumi/kubernetes,
 *                        for a running cluster; unchanged values make no update, so CoreDNS
 *                        restarts only when the rendered config changed;
 *   - serverManifest:    a manifest in /var/lib/rancher/rke2/server/manifests on the first server,
 *                        written over SSH before RKE2 first starts (standalone RKE2);
 *   - rancherChartValues: the values as Rancher `chartValues`, for a ClusterV2 to carry.
 * Plus the DNS-egress NetworkPolicies and a live preflight of the upstream resolvers. The
 * policies go in only behind a live check of each namespace's own egress policies
 * (egress-check-provider.ts): in a namespace whose egress nothing restricts yet they would be a
 * default-deny, not an allowance. Rancher chartValues carry no NetworkPolicy, and this
 * component delivers none downstream: what is possible there is the same KubeEgressCheck and
 * NetworkPolicies on the downstream cluster's own kubeconfig (RancherDownstreamCluster's
 * `kubeconfig` output), once its ClusterSync has passed; before that no apiserver exists to read.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import {
  ClusterSettings,
  DNS_EGRESS_SSH_CHECK,
  DnsSettings,
  NodeSpec,
  RKE2_MANIFESTS_DIR,
} from "../model";
import { scriptRef } from "../assets";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";
import { RemoteFile, rke2FactsScriptRef } from "../remote-file";
import { CorednsChartValues } from "./chart";
import { KubeEgressCheck } from "./egress-check-provider";
import { RELEASE_TABLE_MODULE } from "./chart-releases";
import {
  keepOperatorValues,
  OPERATOR_VALUES_ANNOTATION,
  operatorValuesOf,
  parseValuesContent,
} from "./kept-values";
import { LiveHelmChartConfig, readHelmChartConfig } from "./kube-api";
import { manifestCheck } from "./manifest-check-provider";
import {
  ANNOTATIONS,
  dnsEgressNetworkPolicyObject,
  helmChartConfigObject,
  renderManifests,
  renderRancherChartValues,
} from "./manifests";
import { clusterDnsChartValues, releaseDnsProblem } from "./values";

export { UpstreamResolverPreflight } from "./preflight";

export const DNS_MANIFEST_PATH = `${RKE2_MANIFESTS_DIR}/rke2-remediation-dns.yaml`;

export type DnsDelivery =
  | {
      readonly kind: "helmChartConfig";
      readonly provider: k8s.Provider;
      /** The provider's kubeconfig, which the live check of the namespaces reads through. */
      readonly kubeconfig: pulumi.Input<string>;
      /**
       * The live `rke2-coredns` HelmChartConfig (kube-api.ts readHelmChartConfig), whose
       * operator-written values the fix keeps; left out, none is kept (the mock runtime).
       */
      readonly live?: pulumi.Input<LiveHelmChartConfig>;
    }
  | {
      readonly kind: "serverManifest";
      /** The server the manifest is written to (the first). */
      readonly server: NodeSpec;
      /** Every server of the cluster, each checked for a manifest of its own that defines the fix's object. */
      readonly servers: readonly NodeSpec[];
      readonly sshPrivateKey: SshKey;
    }
  | { readonly kind: "rancherChartValues" };

/**
 * The object with the provider's patch-force annotation: a hand edit (`kubectl edit`/`patch`)
 * makes its editor the owner of the fields it changed under server-side apply, and the next
 * `pulumi up --refresh` would then stop on a field-manager conflict instead of repairing the
 * drift (pulumi/pulumi-kubernetes provider/v4 pkg/await/await.go `patchForce`, annotation
 * `pulumi.com/patchForce` in pkg/metadata/annotations.go, at the commit the toolchain builds).
 */
function forceOwnership(object: Record<string, unknown>): Record<string, unknown> {
  const metadata = object.metadata as { annotations?: Record<string, string> };
  return {
    ...object,
    metadata: {
      ...metadata,
      annotations: { ...metadata.annotations, "pulumi.com/patchForce": "true" },
    },
  };
}

/**
 * The live `rke2-coredns` HelmChartConfig, read through the kubeconfig when the program runs, so
 * that a preview already shows the operator's values kept in the diff. A preview that cannot
 * reach the cluster (not installed yet) warns and goes on as if there were none; `up` stops.
 */
export function liveHelmChartConfig(
  kubeconfig: pulumi.Input<string>,
  cluster: string,
): pulumi.Output<LiveHelmChartConfig> {
  return pulumi.output(kubeconfig).apply(async (text) => {
    try {
      return await readHelmChartConfig(text);
    } catch (err) {
      const why = `cannot read the HelmChartConfig kube-system/rke2-coredns of cluster ${cluster}: ${(err as Error).message}`;
      if (!pulumi.runtime.isDryRun()) {
        throw new Error(
          `${why}. Its operators' values would be lost under the fix's; make the cluster reachable through rke2-remediation:kubeconfig and run pulumi up again.`,
        );
      }
      void pulumi.log.warn(
        `${why}; the preview assumes there is none, and up reads it again (and stops if it still cannot).`,
      );
      return { found: false as const };
    }
  });
}

export interface ClusterDnsArgs {
  readonly cluster: ClusterSettings;
  readonly dns: DnsSettings;
  readonly delivery: DnsDelivery;
}

export class ClusterDns extends pulumi.ComponentResource {
  /** The rke2-coredns values (chart defaults when the stack configures no fix). */
  public readonly values: CorednsChartValues;
  /** The values as Rancher `rkeConfig.chartValues` YAML. */
  public readonly chartValues: string;

  constructor(name: string, args: ClusterDnsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:dns:ClusterDns", name, {}, opts);
    const { cluster, dns, delivery } = args;
    const problem = releaseDnsProblem(dns, cluster);
    if (problem?.kind === "releaseNotInTable") {
      throw new pulumi.ResourceError(
        `RKE2 ${problem.release} is not in the release table (${RELEASE_TABLE_MODULE}); the cluster DNS it runs is unknown.`,
        this,
      );
    }
    if (problem?.kind === "nodeLocalBypassesFix") {
      throw new pulumi.ResourceError(
        `RKE2 ${problem.release} ships rke2-coredns ${problem.chart}, which has no nodelocal.extraClusterDomains; ` +
          `node-local-dns would send ${problem.zones.join(", ")} past the fix (seed 000).`,
        this,
      );
    }
    this.values = clusterDnsChartValues(dns, cluster);
    this.chartValues = renderRancherChartValues(this.values);
    const helmChartConfig = helmChartConfigObject(this.values, cluster, dns);
    const policies = dns.policyNamespaces.map((ns) =>
      dnsEgressNetworkPolicyObject(ns.name, dns, cluster),
    );

    switch (delivery.kind) {
      case "helmChartConfig": {
        // Retained on delete, as the server manifest is: `pulumi destroy` must not hand the
        // cluster back to the chart's Corefile (seed 000) nor drop the DNS egress policies
        // (seed 001). Pulumi then skips the provider's Delete and only forgets the objects
        // (pulumi.com docs/iac/concepts/resources/options/retainondelete/).
        const k8sOpts = { parent: this, provider: delivery.provider, retainOnDelete: true };
        // The values its operators wrote are kept beside the fix (kept-values.ts). The live
        // object comes through the kubeconfig, a secret; the values themselves are not.
        const object = pulumi.unsecret(
          pulumi.output(delivery.live ?? { found: false as const }).apply((live) => {
            const theirs = operatorValuesOf(live, ANNOTATIONS.rke2Version);
            if (theirs?.adopted) this.reportAdoption(cluster.name, theirs.text);
            return forceOwnership(
              helmChartConfigObject(this.values, cluster, dns, theirs?.text),
            ) as { metadata: k8s.types.input.meta.v1.ObjectMeta; spec: Record<string, unknown> };
          }),
        );
        new k8s.apiextensions.CustomResource(
          `${name}-rke2-coredns`,
          {
            apiVersion: helmChartConfig.apiVersion as string,
            kind: helmChartConfig.kind as string,
            metadata: object.metadata,
            spec: object.spec,
          },
          k8sOpts,
        );
        if (policies.length === 0) break;
        const check = new KubeEgressCheck(
          `${name}-dns-egress-check`,
          {
            cluster: cluster.name,
            kubeconfig: delivery.kubeconfig,
            namespaces: dns.policyNamespaces,
          },
          { parent: this },
        );
        for (const policy of policies.map(forceOwnership)) {
          const ns = (policy.metadata as { namespace: string }).namespace;
          new k8s.networking.v1.NetworkPolicy(
            `${name}-dns-egress-${ns}`,
            policy as k8s.networking.v1.NetworkPolicyArgs,
            { ...k8sOpts, dependsOn: [check] },
          );
        }
        break;
      }
      case "serverManifest": {
        // The policies share the manifest with the HelmChartConfig: a refusal stops both.
        const check =
          policies.length === 0
            ? []
            : [
                new HostStepResource(
                  "sshEgressCheck",
                  DNS_EGRESS_SSH_CHECK,
                  `${name}-dns-egress-check`,
                  {
                    ssh: delivery.server.ssh,
                    sshPrivateKey: delivery.sshPrivateKey,
                    script: scriptRef(__dirname, "egress-facts.sh"),
                  },
                  {
                    node: delivery.server.name,
                    namespaces: dns.policyNamespaces.map((n) => ({ ...n })),
                    rke2FactsScript: rke2FactsScriptRef(),
                    refusals: [],
                  },
                  { parent: this },
                ),
              ];
        // Every server applies its own manifests directory (manifest-conflicts.ts).
        const conflictChecks = delivery.servers.map((server) =>
          manifestCheck(
            `${name}-manifest-check-${server.name}`,
            server,
            delivery.sshPrivateKey,
            server.name === delivery.server.name ? DNS_MANIFEST_PATH : undefined,
            { parent: this },
          ),
        );
        // Retained: removing the manifest would not undo the fix, and a later server start
        // must still find it.
        new RemoteFile(
          `${name}-manifest`,
          {
            hostName: delivery.server.name,
            ssh: delivery.server.ssh,
            sshPrivateKey: delivery.sshPrivateKey,
            path: DNS_MANIFEST_PATH,
            content: renderManifests([helmChartConfig, ...policies]),
            mode: "0600",
            retainOnDelete: true,
            // RKE2 applies the manifests under the data-dir it reads, which a hand-built server
            // may set in config.yaml, a drop-in or its environment.
            underRke2DataDir: true,
          },
          { parent: this, dependsOn: [...check, ...conflictChecks] },
        );
        break;
      }
      case "rancherChartValues":
        break;
      default: {
        const unknown: never = delivery;
        throw new pulumi.ResourceError(`unknown DNS delivery ${JSON.stringify(unknown)}`, this);
      }
    }
    this.registerOutputs({ chartValues: this.chartValues });
  }

  /** Says, before anything is written, which of an operator's values the fix keeps and which it replaces. */
  private reportAdoption(cluster: string, operatorValues: string): void {
    const where = `the live HelmChartConfig kube-system/rke2-coredns of cluster ${cluster}`;
    const { kept, replaced } = keepOperatorValues(
      this.values,
      parseValuesContent(operatorValues, where),
    );
    void pulumi.log.warn(
      `${where} was written by hand; its values are kept beside the fix: ${kept.join(", ") || "none"}. ` +
        `Replaced by the fix: ${replaced.join(", ") || "none"}. Their text is recorded in the ` +
        `annotation ${OPERATOR_VALUES_ANNOTATION}, which later runs keep; edit it to change a kept value.`,
      this,
    );
  }
}
