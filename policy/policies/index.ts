import { Policy } from "@pulumi/policy";
import { corednsClusterDomainReachesKubernetes } from "./coredns-cluster-domain-reaches-kubernetes";
import { corednsConfigMapStaysValid } from "./coredns-configmap-stays-valid";
import { corednsForwardNotALoop } from "./coredns-forward-not-a-loop";
import { corednsValuesKnownKeys } from "./coredns-values-known-keys";
import { networkPolicyDnsUdpAndTcp } from "./networkpolicy-dns-udp-and-tcp";
import { dnsEgressPolicyIsAnAllowance } from "./dns-egress-policy-is-an-allowance";
import { nodeLocalCarriesFixZones } from "./nodelocal-carries-fix-zones";
import { nodeLocalIpvsConsistent } from "./nodelocal-ipvs-consistent";
import { cniDevicesUnmanaged } from "./cni-devices-unmanaged";
import { firewallServiceNeverStopped } from "./firewall-service-never-stopped";
import { installerFetchedOverHttps } from "./installer-fetched-over-https";
import { libvirtDhcpDomainLocal } from "./libvirt-dhcp-domain-local";
import { libvirtDnsRecordInSubnet } from "./libvirt-dns-record-in-subnet";
import { libvirtRecordOutsideNeutralizedDomain } from "./libvirt-record-outside-neutralized-domain";
import { networkManagerLeavesKubeIpvs0Alone } from "./networkmanager-leaves-kube-ipvs0-alone";
import { nodePreparedBeforeClusterJoin } from "./node-prepared-before-cluster-join";
import { rancherChartValuesCarryDnsFix } from "./rancher-chart-values-carry-dns-fix";
import { rancherClusterHasEtcdControlplaneWorker } from "./rancher-cluster-has-etcd-controlplane-worker";
import { rancherEtcdRegistrationsOneAtATime } from "./rancher-etcd-registrations-one-at-a-time";
import { rancherFirstGroupOneEtcd } from "./rancher-first-group-one-etcd";
import { rancherFirstGroupRegistersWithoutWaiting } from "./rancher-first-group-registers-without-waiting";
import { rancherRecordsCoverManagementServers } from "./rancher-records-cover-management-servers";
import { rancherRegistrationsUseAllowedRancher } from "./rancher-registrations-use-allowed-rancher";
import { rancherRegistrationVerifiesCa } from "./rancher-registration-verifies-ca";
import { rancherSingleCorednsConfig } from "./rancher-single-coredns-config";
import { rke2RegistrationAddressInTlsSan } from "./rke2-registration-address-in-tls-san";
import { rke2SystemImagesFromAllowedRegistry } from "./rke2-system-images-from-allowed-registry";
import { rke2ServersJoinOneAtATime } from "./rke2-servers-join-one-at-a-time";
import { rke2TokenKeptSecret } from "./rke2-token-kept-secret";
import { rke2RegistryCredentialsKeptSecret } from "./rke2-registry-credentials-kept-secret";
import { sshHostKeyPinned } from "./ssh-host-key-pinned";

/** Every policy of the pack, in the order they are reported. */
export const allPolicies: Policy[] = [
  sshHostKeyPinned,
  firewallServiceNeverStopped,
  installerFetchedOverHttps,
  networkManagerLeavesKubeIpvs0Alone,
  cniDevicesUnmanaged,
  nodePreparedBeforeClusterJoin,
  rke2ServersJoinOneAtATime,
  rke2RegistrationAddressInTlsSan,
  rke2TokenKeptSecret,
  rke2RegistryCredentialsKeptSecret,
  rke2SystemImagesFromAllowedRegistry,
  libvirtDnsRecordInSubnet,
  libvirtRecordOutsideNeutralizedDomain,
  rancherRecordsCoverManagementServers,
  libvirtDhcpDomainLocal,
  corednsClusterDomainReachesKubernetes,
  corednsConfigMapStaysValid,
  corednsValuesKnownKeys,
  corednsForwardNotALoop,
  nodeLocalIpvsConsistent,
  nodeLocalCarriesFixZones,
  networkPolicyDnsUdpAndTcp,
  dnsEgressPolicyIsAnAllowance,
  rancherRegistrationVerifiesCa,
  rancherRegistrationsUseAllowedRancher,
  rancherClusterHasEtcdControlplaneWorker,
  rancherFirstGroupRegistersWithoutWaiting,
  rancherFirstGroupOneEtcd,
  rancherEtcdRegistrationsOneAtATime,
  rancherChartValuesCarryDnsFix,
  rancherSingleCorednsConfig,
];
