import { rancherSingleCorednsConfig as policy } from "../../policy/policies/rancher-single-coredns-config";
import { helmChartConfigObject, renderManifests } from "../../components/cluster-dns/manifests";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import { RANCHER_CLUSTER_TYPE } from "../../components/model";
import { clusterV2, labProgramResources, model, uat1 } from "./rancher-fixture";
import { assertNoViolations, assertViolation } from "./util";

describe("policy rancher-single-coredns-config", function () {
  this.timeout(60000);
  const corednsConfig = helmChartConfigObject(clusterDnsChartValues(model.dns, uat1));
  const otherObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "site-settings", namespace: "kube-system" },
    data: { site: "lab" },
  };
  const withManifest = (objects: Record<string, unknown>[]) =>
    clusterV2({ additionalManifest: renderManifests(objects) });

  it("accepts the DNS fix in chartValues with an unrelated additional manifest", async () => {
    await assertNoViolations(policy, [withManifest([otherObject])]);
  });

  it("flags a second rke2-coredns HelmChartConfig in additionalManifest", async () => {
    await assertViolation(
      policy,
      [withManifest([otherObject, corednsConfig])],
      /cluster uat1 carries rke2-coredns in rkeConfig\.chartValues and also a HelmChartConfig rke2-coredns .* one silently wins/,
    );
  });

  it("accepts the HelmChartConfig in additionalManifest when chartValues leave rke2-coredns out", async () => {
    const cluster = withManifest([corednsConfig]);
    const rkeConfig = cluster.inputs.rkeConfig as Record<string, unknown>;
    await assertNoViolations(policy, [
      { ...cluster, inputs: { ...cluster.inputs, rkeConfig: { ...rkeConfig, chartValues: "" } } },
    ]);
  });

  it("accepts a HelmChartConfig for another chart", async () => {
    const ingress = {
      ...corednsConfig,
      metadata: { name: "rke2-ingress-nginx", namespace: "kube-system" },
    };
    await assertNoViolations(policy, [withManifest([ingress])]);
  });

  it("accepts an rke2-coredns HelmChartConfig outside kube-system, which helm-controller ignores", async () => {
    const elsewhere = {
      ...corednsConfig,
      metadata: { name: "rke2-coredns", namespace: "default" },
    };
    await assertNoViolations(policy, [withManifest([elsewhere])]);
  });

  it("tolerates an additional manifest that is not YAML", async () => {
    await assertNoViolations(policy, [clusterV2({ additionalManifest: "kind: [\n---\n: : :" })]);
  });

  it("finds the duplicate after a document that is not YAML", async () => {
    const manifest = `kind: [\n---\n${renderManifests([corednsConfig])}`;
    await assertViolation(
      policy,
      [clusterV2({ additionalManifest: manifest })],
      /one silently wins/,
    );
  });

  it("accepts the lab stack's own ClusterV2", async function () {
    await assertNoViolations(policy, await labProgramResources(RANCHER_CLUSTER_TYPE));
  });
});
