import { Policy } from "@pulumi/policy";
import { firewallServiceNeverStopped } from "./firewall-service-never-stopped";
import { libvirtDnsRecordInSubnet } from "./libvirt-dns-record-in-subnet";
import { networkManagerLeavesKubeIpvs0Alone } from "./networkmanager-leaves-kube-ipvs0-alone";
import { sshHostKeyPinned } from "./ssh-host-key-pinned";

/** Every policy of the pack, in the order they are reported. */
export const allPolicies: Policy[] = [
  sshHostKeyPinned,
  firewallServiceNeverStopped,
  networkManagerLeavesKubeIpvs0Alone,
  libvirtDnsRecordInSubnet,
];
