import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { CorednsChartValues } from "../../components/cluster-dns/chart";
import {
  dnsEgressNetworkPolicyObject,
  helmChartConfigObject,
} from "../../components/cluster-dns/manifests";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import type { RecordedResource } from "../../components/model";
import { HELM_CHART_CONFIG_TYPE, NETWORK_POLICY_TYPE } from "../../components/model";
import { estateModel } from "../support/lab-stack";
import { resource } from "./util";

export const model = estateModel();
/** The management cluster: IPVS kube-proxy, NodeLocalDNS on. */
export const cluster = model.management;
/** Chart values a test case may change in place. */
export type EditableValues = {
  -readonly [K in keyof CorednsChartValues]: CorednsChartValues[K];
} & Record<string, unknown>;

export const compliantValues = (): EditableValues =>
  JSON.parse(JSON.stringify(clusterDnsChartValues(model.dns, cluster)));

/** A HelmChartConfig resource carrying these values, as the component delivers it. */
export function helmChartConfig(values: CorednsChartValues, kubeletDns?: string): RecordedResource {
  const object = helmChartConfigObject(values, cluster, model.dns);
  if (kubeletDns !== undefined) {
    const meta = object.metadata as { annotations: Record<string, string> };
    meta.annotations["rke2-remediation.io/kubelet-cluster-dns"] = kubeletDns;
  }
  return resource(HELM_CHART_CONFIG_TYPE, object);
}

export function networkPolicy(ports: { protocol?: string; port: number }[]): RecordedResource {
  const object = dnsEgressNetworkPolicyObject("default", model.dns, cluster) as {
    spec: { egress: { ports: unknown[] }[] };
  };
  object.spec.egress[0].ports = ports;
  return resource(NETWORK_POLICY_TYPE, object);
}

/** Seed 000's own HelmChartConfig values. */
export function seedValues(): CorednsChartValues & Record<string, unknown> {
  const doc = YAML.parse(
    fs.readFileSync(
      path.join(__dirname, "../../../test/fixtures/seed-000-helmchartconfig.yaml"),
      "utf8",
    ),
  );
  return YAML.parse(doc.spec.valuesContent);
}
