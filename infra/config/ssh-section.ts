/**
 * `ssh` and the nodes' SSH endpoints: the reader of an endpoint and the checks on every
 * endpoint of the estate (pinned host keys, ports, addresses).
 */
import { SshEndpoint, isIpv4 } from "../../components/model";
import { ConfigReader } from "./reader";
import { hostKeyProblem } from "./host-key";
import { readSettings, SSH_KEYS } from "./stack-keys";
import { secretShapeOf } from "./secret-checks";
import { EstateFacts, isHostname, nodeIndex } from "./values";

const HOST_KEY =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521) [A-Za-z0-9+/]+={0,3}$/;

/**
 * An SSH endpoint. Not `required` (no part of the stack's selection connects there), a missing
 * host or host key is no problem and gives no endpoint; values given are still checked.
 */
export function readSsh(
  r: ConfigReader,
  value: unknown,
  path: string,
  defaultHost: string | undefined,
  who: string,
  required = true,
): SshEndpoint | undefined {
  const o = r.object(value, path) ?? {};
  const { port, user, hostKey, ...given } = readSettings(r, SSH_KEYS, o, path);
  const host = o.host === undefined ? defaultHost : given.host;
  if (host === undefined && required) {
    r.problem(`${path}.host`, `is missing; set the SSH address of ${who}.`);
  }
  if (host === "") return undefined;
  if (hostKey === undefined) {
    if (o.hostKey === undefined && required) {
      r.problem(
        `${path}.hostKey`,
        `${who} has no pinned host key; SSH refuses unverified hosts. Read the key on the host ` +
          `(cat /etc/ssh/ssh_host_ed25519_key.pub) and set the whole line here.`,
      );
    }
  } else if (!HOST_KEY.test(hostKey) && secretShapeOf(hostKey) === undefined) {
    // A private key pasted here is reported by checkPlainSecrets, without echoing it.
    r.problem(
      `${path}.hostKey`,
      `for ${who} is not an OpenSSH public key line ("ssh-ed25519 AAAA..."); copy it from the host's /etc/ssh/ssh_host_*_key.pub without the comment.`,
    );
  }
  const inside =
    hostKey !== undefined && HOST_KEY.test(hostKey) ? hostKeyProblem(hostKey) : undefined;
  if (inside) {
    r.problem(
      `${path}.hostKey`,
      `for ${who} is not a valid key: ${inside}. Copy the line again from the host's /etc/ssh/ssh_host_*_key.pub.`,
    );
  }
  if (host === undefined || hostKey === undefined || !HOST_KEY.test(hostKey) || inside)
    return undefined;
  return { host, port, user, hostKey };
}

/**
 * Every host the stack reaches over SSH is one machine: two nodes at one endpoint would prepare
 * and join the same machine twice, and a node at the KVM host's endpoint would disable the KVM
 * host's firewall and install RKE2 there.
 */
export function checkSshEndpoints(r: ConfigReader, facts: EstateFacts): void {
  const endpoint = (ssh: SshEndpoint) => `${ssh.host.toLowerCase()}:${ssh.port}`;
  const seen = new Map<string, string>();
  const kvmHost = facts.libvirt?.ssh;
  if (kvmHost) seen.set(endpoint(kvmHost), "libvirt.ssh (the KVM host)");
  for (const node of facts.nodes) {
    const index = nodeIndex(facts.raw.values, node);
    const key = endpoint(node.ssh);
    const first = seen.get(key);
    if (first !== undefined) {
      r.problem(
        `nodes[${index}].ssh.host`,
        `node ${node.name} is reached at ${node.ssh.host} port ${node.ssh.port}, as ${first} is; every node is its own machine. Set the node's own SSH address (ssh.host, default its ip) or port.`,
      );
    } else seen.set(key, `nodes[${index}] (${node.name})`);
    if (!isIpv4(node.ssh.host) && !isHostname(node.ssh.host)) {
      r.problem(
        `nodes[${index}].ssh.host`,
        `"${node.ssh.host}" is neither an IPv4 address nor a DNS name; set the address SSH reaches node ${node.name} at, or remove the key to use its ip.`,
      );
    }
  }
  if (kvmHost && !isIpv4(kvmHost.host) && !isHostname(kvmHost.host)) {
    r.problem(
      "libvirt.ssh.host",
      `"${kvmHost.host}" is neither an IPv4 address nor a DNS name; set the KVM host's SSH address, e.g. 192.168.122.1.`,
    );
  }
}
