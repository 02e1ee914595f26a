import * as assert from "assert/strict";
/**
 * A compliant Rancher downstream cluster as the program registers it (the resource shapes are the
 * contract with components/): the ClusterV2 carrying the DNS fix in chartValues, node
 * registrations ordered by ClusterSyncs, and the libvirt records resource naming the neutralised
 * search domains. Policy cases copy it and change one field.
 */
import * as YAML from "yaml";
import { renderRancherChartValues } from "../../components/cluster-dns/manifests";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import { rancherCaChecksum } from "../../components/rancher-cluster/registration";
import { rancherNodeCommand } from "../../infra/mock-runtime";
import type { RecordedResource } from "../../components/model";
import {
  LIBVIRT_DNS_RECORDS,
  RANCHER_CLUSTER_SYNC_TYPE,
  RANCHER_CLUSTER_TYPE,
  RANCHER_NODE_REGISTRATION,
} from "../../components/model";
import { estateModel } from "../support/lab-stack";
import { resourcesOf } from "../support/program";
import { HOST_KEY, resource } from "./util";

export const model = estateModel();
export const uat1 = model.rancher!.downstreamClusters.find((c) => c.name === "uat1")!;
export const RANCHER_HOST = model.rancher!.hostname;

/** The stack's Rancher CA (its bytes matter only through the checksum) and that checksum. */
export const CA_CERTIFICATE =
  "-----BEGIN CERTIFICATE-----\nlab Rancher CA\n-----END CERTIFICATE-----\n";
export const CA_CHECKSUM = rancherCaChecksum(CA_CERTIFICATE);

/** Rancher's nodeCommand for the lab's Rancher, pinning `checksum`. */
export const registrationCommand = (checksum = CA_CHECKSUM): string =>
  rancherNodeCommand({
    serverUrl: `https://${RANCHER_HOST}`,
    token: "TOKEN",
    caChecksum: checksum,
    insecure: false,
  });

/** Rancher's insecureNodeCommand: no certificate check, no CA checksum. */
export const INSECURE_COMMAND = rancherNodeCommand({
  serverUrl: `https://${RANCHER_HOST}`,
  token: "TOKEN",
  insecure: true,
});

/** uat1's nodes: three etcd + control-plane nodes, then two workers. */
export const UAT1_NODES = [
  { node: "sza122031.local", ip: "192.168.122.31", roles: ["etcd", "controlplane"] },
  { node: "sza122032.local", ip: "192.168.122.32", roles: ["etcd", "controlplane"] },
  { node: "sza122033.local", ip: "192.168.122.33", roles: ["etcd", "controlplane"] },
  { node: "sza122030.local", ip: "192.168.122.30", roles: ["worker"] },
  { node: "sza122034.local", ip: "192.168.122.34", roles: ["worker"] },
] as const;

const dependingOn = (
  r: RecordedResource,
  after: readonly RecordedResource[],
): RecordedResource => ({
  ...r,
  dependencies: after.map((d) => d.urn),
});

export function registration(
  spec: { readonly node: string; readonly ip: string; readonly roles: readonly string[] },
  after: readonly RecordedResource[] = [],
  cluster = "uat1",
): RecordedResource {
  const props = {
    node: spec.node,
    nodeIp: spec.ip,
    cluster,
    roles: [...spec.roles],
    connection: { host: spec.ip, port: 22, user: "root", hostKey: HOST_KEY },
    sshPrivateKey: "key",
    registrationCommand: registrationCommand(),
    insecure: false,
    caCertificate: CA_CERTIFICATE,
    caChecksum: CA_CHECKSUM,
    rancherHost: RANCHER_HOST,
    script: "register-node.sh",
    timeoutSeconds: 900,
    pollSeconds: 10,
  };
  return dependingOn(
    resource(RANCHER_NODE_REGISTRATION.token, props, `register-${spec.node}`),
    after,
  );
}

export function clusterSync(name: string, after: readonly RecordedResource[]): RecordedResource {
  return dependingOn(
    resource(RANCHER_CLUSTER_SYNC_TYPE, { stateConfirm: 2 }, `sync-${name}`),
    after,
  );
}

/**
 * The order the program uses: the first group (.31 etcd + controlplane, .30 worker) together,
 * a sync; then .32 and .33 (etcd) each alone behind a sync; then the other worker .34 and a last
 * sync.
 */
export function registrationChain(): RecordedResource[] {
  const [first, ...otherEtcd] = UAT1_NODES.filter((n) => n.roles[0] !== "worker");
  const [firstWorker, ...otherWorkers] = UAT1_NODES.filter((n) => n.roles[0] === "worker");
  const group = [registration(first), registration(firstWorker)];
  let lastSync = [clusterSync(first.node, group)];
  const resources: RecordedResource[] = [...group, ...lastSync];
  for (const spec of otherEtcd) {
    const reg = registration(spec, lastSync);
    lastSync = [clusterSync(spec.node, [reg])];
    resources.push(reg, ...lastSync);
  }
  const workers = otherWorkers.map((spec) => registration(spec, lastSync));
  resources.push(...workers, clusterSync("workers", workers));
  return resources;
}

/** The ClusterV2 with the product's rke2-coredns values as chartValues. */
export function clusterV2(rkeConfig: Record<string, unknown> = {}): RecordedResource {
  const machineGlobalConfig = YAML.stringify({
    cni: uat1.cni,
    "cluster-cidr": uat1.clusterCidr,
    "service-cidr": uat1.serviceCidr,
    "cluster-dns": uat1.clusterDnsIp,
    "cluster-domain": uat1.clusterDomain,
    "kube-proxy-arg": [`proxy-mode=${uat1.kubeProxyMode}`],
  });
  return resource(
    RANCHER_CLUSTER_TYPE,
    {
      name: uat1.name,
      kubernetesVersion: uat1.version,
      rkeConfig: {
        machineGlobalConfig,
        chartValues: renderRancherChartValues(clusterDnsChartValues(model.dns, uat1)),
        etcd: {
          snapshotScheduleCron: uat1.etcdSnapshot.scheduleCron,
          snapshotRetention: uat1.etcdSnapshot.retention,
        },
        upgradeStrategy: { controlPlaneConcurrency: "1", workerConcurrency: "1" },
        ...rkeConfig,
      },
    },
    uat1.name,
  );
}

/** The libvirt records resource, which records the neutralised search domains for policies. */
export function libvirtRecords(neutralizedSearchDomains = model.dns.neutralizedSearchDomains) {
  return resource(LIBVIRT_DNS_RECORDS.token, {
    network: model.libvirt.network,
    subnet: model.libvirt.subnet,
    rancherHostname: RANCHER_HOST,
    neutralizedSearchDomains: [...neutralizedSearchDomains],
    records: [],
  });
}

/** A copy of `resources` in which the resource called `name` has other inputs or dependencies. */
export function changed(
  resources: readonly RecordedResource[],
  name: string,
  change: { inputs?: Record<string, unknown>; after?: readonly string[] },
): RecordedResource[] {
  const urnOf = (n: string) => {
    const found = resources.find((r) => r.name === n);
    if (!found) throw new Error(`no resource ${n} in the fixture`);
    return found.urn;
  };
  urnOf(name);
  return resources.map((r) =>
    r.name !== name
      ? r
      : {
          ...r,
          inputs: { ...r.inputs, ...change.inputs },
          dependencies: change.after ? change.after.map(urnOf) : r.dependencies,
        },
  );
}

/** The lab stack's own resources, for the case "the program passes its own policy". */
export async function labProgramResources(type: string): Promise<RecordedResource[]> {
  const resources = await resourcesOf(model);
  assert.ok(
    resources.some((r) => r.type === type),
    `the lab program registers no ${type}`,
  );
  return resources;
}
