/**
 * One RKE2 server on a KVM virtual machine, from the rke2-remediation package: the node prepared
 * for RKE2 (firewall services disabled, never stopped; Rocky's REJECT rules gone; NetworkManager
 * off the Kubernetes devices) and the cluster DNS fix written to the server's manifests
 * directory, checked against its upstream resolvers first. RKE2 itself, the libvirt records and
 * Rancher are left out (`deploy`), so the stack needs no join token.
 *
 *   pulumi config set server '{"name": "rke2-1", "ip": "192.168.122.20", "hostKey": "ssh-ed25519 AAAA..."}'
 *   pulumi config set --path 'upstreamResolvers[0]' 192.168.122.1
 *   pulumi config set --secret opsSshKey < ~/.ssh/id_ed25519
 */
import * as pulumi from "@pulumi/pulumi";
import { Rke2Estate } from "rke2-remediation";

interface Server {
  readonly name: string;
  readonly ip: string;
  /** The server's /etc/ssh/ssh_host_ed25519_key.pub line; connections are pinned to it. */
  readonly hostKey: string;
}

const config = new pulumi.Config();
const server = config.requireObject<Server>("server");

const estate = new Rke2Estate("one-server", {
  // The same keys as a stack file of the rke2-remediation project, checked the same way.
  settings: {
    deploy: { libvirtDnsRecords: false, rke2Servers: false, rancherClusters: false },
    nodes: [{ name: server.name, ip: server.ip, role: "server", ssh: { hostKey: server.hostKey } }],
    rke2: { version: config.get("rke2Version") ?? "v1.35.7+rke2r1" },
    dns: {
      neutralizedSearchDomains: ["local"],
      upstreamResolvers: config.requireObject<string[]>("upstreamResolvers"),
    },
  },
  // The program keeps its key under a name of its own; the host steps' provider reads this same
  // stack secret when it connects (a refresh or destroy runs no program), so it is named here.
  sshPrivateKey: config.requireSecret("opsSshKey"),
  sshPrivateKeyConfig: "opsSshKey",
});

export const preparedNodes = estate.outputs.preparedNodes;
export const nodesRequiringReboot = estate.outputs.nodesRequiringReboot;
