/**
 * The smallest useful stack: node preparation and the libvirt records only, on the lab's hosts.
 * It names no RKE2 release, no node role, no resolver and no Rancher, and holds one secret.
 */
import { MutableRawConfig } from "./lab-stack";

// The lab's placeholder keys (stacks/Pulumi.lab.yaml): their bytes spell PLACEHOLDER-<host>.
const KVM_HOST_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLWt2bS1ob3N0LS0tLS0tLS0tLS0t";
const NODE_KEY_BYTES: Readonly<Record<number, string>> = { 20: "MC", 21: "MS", 22: "Mi" };
const nodeHostKey = (octet: number) =>
  `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLXN6YTEyMjAy${NODE_KEY_BYTES[octet]}0tLS0tLS0tLS0t`;

/** A fresh copy of the stack's config; its one secret, sshPrivateKey, recorded as set. */
export function preparationAndRecordsStack(): MutableRawConfig {
  return {
    values: {
      deploy: {
        libvirtDnsRecords: true,
        nodePreparation: true,
        rke2Servers: false,
        clusterDns: false,
        rancherClusters: false,
      },
      nodePreparation: { firewalld: "disable" },
      libvirt: {
        ssh: { host: "192.168.122.1", hostKey: KVM_HOST_KEY },
        dnsRecords: { "ai-ear.cn": ["192.168.122.20", "192.168.122.21", "192.168.122.22"] },
      },
      nodes: [20, 21, 22].map((octet) => ({
        name: `sza1220${octet}.local`,
        ip: `192.168.122.${octet}`,
        ssh: { hostKey: nodeHostKey(octet) },
      })),
    },
    secretKeys: new Set(["sshPrivateKey"]),
  };
}
