/**
 * The components, the model and the renderers, as a program that imports this package sees them
 * (`rke2-remediation/components`). Each component takes pieces of the validated model; a
 * program that starts from a stack file's settings uses `Rke2Estate` (../infra/library.ts),
 * which validates them and declares these components the way the stack-config program does.
 */
export * from "./model";
export {
  LibvirtDnsRecords,
  type LibvirtDnsRecordsArgs,
  type DnsHostRecord,
  renderDnsHostXml,
} from "./libvirt-dns";
export {
  NodePreparations,
  type NodePreparationsArgs,
  type NodePreparationArgs,
  type PreparedNode,
  NodePortsPreflight,
  ServerPortsPreflight,
  renderUnmanagedDevicesConfig,
} from "./node-preparation";
export {
  ClusterDns,
  type ClusterDnsArgs,
  type DnsDelivery,
  DNS_MANIFEST_PATH,
  UpstreamResolverPreflight,
} from "./cluster-dns";
export {
  Rke2Cluster,
  type Rke2ClusterArgs,
  type Rke2ClusterNode,
  renderRke2ServerConfig,
  renderRke2AgentConfig,
} from "./rke2-cluster";
export { RancherDownstreamCluster, type RancherDownstreamClusterArgs } from "./rancher-cluster";
export { RemoteFile, type RemoteFileArgs } from "./remote-file";
export { renderChartCorefile, renderChartNodeLocalCorefile } from "./cluster-dns/chart";
export { clusterDnsChartValues } from "./cluster-dns/values";
export { renderManifests, renderRancherChartValues } from "./cluster-dns/manifests";
