import { ResourceValidationPolicy } from "@pulumi/policy";
import { isCorednsHelmChartConfig, manifestObjects, rancherChartValues } from "./coredns-config";
import { RANCHER_CLUSTER_TYPE } from "../../components/model";
import { objectProp } from "./props";

/** The HelmChartConfig Rancher writes from chartValues: helm.cattle.io, rke2-coredns, kube-system. */
function isRancherCorednsTarget(doc: Record<string, unknown>): boolean {
  const namespace = objectProp(doc, "metadata")?.namespace;
  return (
    isCorednsHelmChartConfig(doc) &&
    String(doc.apiVersion ?? "").startsWith("helm.cattle.io/") &&
    // One without a namespace counts as well: its name says it is meant for the packaged chart.
    (namespace === undefined || namespace === "kube-system")
  );
}

export const rancherSingleCorednsConfig: ResourceValidationPolicy = {
  name: "rancher-single-coredns-config",
  description:
    "A Rancher cluster that carries rke2-coredns chartValues adds no HelmChartConfig rke2-coredns of its own in additionalManifest.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== RANCHER_CLUSTER_TYPE) return;
    const rke = objectProp(args.props, "rkeConfig") ?? {};
    const chartValues = rancherChartValues(rke);
    if (chartValues?.["rke2-coredns"] === undefined || chartValues["rke2-coredns"] === null) return;
    const manifest = rke.additionalManifest;
    if (typeof manifest !== "string" || !manifestObjects(manifest).some(isRancherCorednsTarget)) {
      return;
    }
    reportViolation(
      `cluster ${String(args.props.name ?? args.name)} carries rke2-coredns in rkeConfig.chartValues and also a ` +
        "HelmChartConfig rke2-coredns in kube-system in rkeConfig.additionalManifest: Rancher writes chartValues as " +
        "that same HelmChartConfig into the server manifests, so two objects share one name and one silently wins, " +
        "possibly without the seed 000 DNS fix. Keep the rke2-coredns values in chartValues only.",
    );
  },
};
