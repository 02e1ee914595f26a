import { Policy } from "@pulumi/policy";
import { cniDevicesUnmanaged } from "./cni-devices-unmanaged";
import { firewallServiceNeverStopped } from "./firewall-service-never-stopped";
import { libvirtDhcpDomainLocal } from "./libvirt-dhcp-domain-local";
import { libvirtDnsRecordInSubnet } from "./libvirt-dns-record-in-subnet";
import { libvirtRecordOutsideNeutralizedDomain } from "./libvirt-record-outside-neutralized-domain";
import { networkManagerLeavesKubeIpvs0Alone } from "./networkmanager-leaves-kube-ipvs0-alone";
import { nodePreparedBeforeClusterJoin } from "./node-prepared-before-cluster-join";
import { rancherRecordsCoverManagementServers } from "./rancher-records-cover-management-servers";
import { sshHostKeyPinned } from "./ssh-host-key-pinned";

/** Every policy of the pack, in the order they are reported. */
export const allPolicies: Policy[] = [
  sshHostKeyPinned,
  firewallServiceNeverStopped,
  networkManagerLeavesKubeIpvs0Alone,
  cniDevicesUnmanaged,
  nodePreparedBeforeClusterJoin,
  libvirtDnsRecordInSubnet,
  libvirtRecordOutsideNeutralizedDomain,
  rancherRecordsCoverManagementServers,
  libvirtDhcpDomainLocal,
];
