/**
 * Warnings: settings that work but are likely mistakes, reported without stopping a run.
 */
import { EnvironmentModel, Rke2PassThrough, cidrContains, parseCidr } from "../../components/model";
import { ConfigProblem } from "./problems";
import { keyIsRead, unusedKeys } from "./deploy-parts";
import { ConfigReader } from "./reader";
import { endpointsWithoutScheme } from "./registries";
import { systemNamespaceOwner } from "../../components/cluster-dns/egress-isolation";
import { unusedKeyMessage } from "./known-keys";
import { CONFIG_NAMESPACE, RawStackConfig } from "./raw-config";

/**
 * Warnings about a valid stack: keys that its `deploy` selection leaves unused, what `up` will
 * check on the live estate, and a fix that would be lost without a word. `verify` prints them
 * and the program logs them; none stops a run. `raw` is the config the model was read from.
 */
export function configWarnings(model: EnvironmentModel, raw: RawStackConfig): ConfigProblem[] {
  const r = new ConfigReader(CONFIG_NAMESPACE);
  for (const { path, parts } of unusedKeys(raw.values, raw.secretKeys, model.deploy)) {
    r.problem(path, unusedKeyMessage(r, parts));
  }
  const { deploy } = model;
  if (keyIsRead(deploy, "dns.policyNamespaces")) {
    model.dns.policyNamespaces.forEach((entry, i) => {
      const owner = systemNamespaceOwner(entry.name);
      if (!owner) return;
      r.problem(
        `dns.policyNamespaces[${i}]`,
        `${entry.name} is ${owner}'s own namespace and can never be isolated: allow-dns-egress goes in ` +
          "there only where an egress policy of the namespace's own already selects every pod, which " +
          "`up` reads from the cluster before creating it, and stops on otherwise (the policy alone " +
          "would cut the namespace off from everything but DNS). Remove the entry unless that " +
          "restriction exists.",
      );
    });
  }
  checkKubeconfigMode(r, model);
  checkNodesOnSubnet(r, model);
  if (keyIsRead(deploy, "rke2.registries"))
    for (const { registry, index, endpoint } of endpointsWithoutScheme(model.management.registries))
      r.problem(
        `rke2.registries.mirrors["${registry}"].endpoint[${index}]`,
        `"${endpoint}" has no scheme, so RKE2 reaches it over HTTPS; a plain-HTTP registry needs ` +
          `http://${endpoint} (rke2-docs install/private_registry.md).`,
      );
  checkFirewalldChosen(r, model, raw);
  const upstreams = model.dns.upstreamResolvers;
  if (keyIsRead(deploy, "dns.upstreamResolvers") && upstreams.length === 1) {
    r.problem(
      "dns.upstreamResolvers",
      `only one upstream resolver (${upstreams[0]}): when it stops answering, as 114.114.114.114 ` +
        "did for HINFO probes in seed 004, every lookup outside the cluster waits for its timeout " +
        "and then fails; configure at least two.",
    );
  }
  const host = model.rancher?.hostname;
  // Only where the downstream clusters' DNS is rendered (deploy.clusterDns or rancherClusters).
  if (
    host !== undefined &&
    keyIsRead(deploy, "dns.staticHosts") &&
    model.dns.staticHosts[host] === undefined
  ) {
    model.rancher?.downstreamClusters.forEach((cluster, i) => {
      r.problem(
        `rancher.downstreamClusters[${i}]`,
        `cluster ${cluster.name}: its cluster DNS has no answer of its own for Rancher's host ` +
          `${host}, so the cluster agent depends on the nodes' upstream resolvers to ` +
          "reach Rancher (seed 000). Give it one: " +
          `${r.key(`dns.staticHosts["${host}"]`)}, ` +
          `${r.key(`libvirt.dnsRecords["${host}"]`)}, or the management servers in ` +
          `${r.key("nodes")} (role server).`,
      );
    });
  }
  return r.problems;
}

/**
 * A node off the libvirt network is allowed (the product reaches it over SSH), but the network's
 * DNS records, seed 000's fix, do not reach a node that does not use that network's DNS, and the
 * checks of records and addresses assume the subnet.
 */
/**
 * Stopping firewalld removes the host firewall its operators may rely on, so the default
 * (`disable`, RKE2's advice: rancher/rke2-docs@9477b7b1:docs/known_issues.md, "Firewalld
 * conflicts with default networking") is said before it happens, until the stack chooses.
 */
function checkFirewalldChosen(r: ConfigReader, model: EnvironmentModel, raw: RawStackConfig): void {
  if (!keyIsRead(model.deploy, "nodePreparation.firewalld")) return;
  const section = raw.values.nodePreparation;
  const chosen = typeof section === "object" && section !== null && "firewalld" in section;
  if (chosen) return;
  r.problem(
    "nodePreparation.firewalld",
    "not set, so `disable`: on every node where firewalld.service is enabled or running, `up` " +
      "disables it, and stops it where its stop flushes no other rules (RKE2: firewalld conflicts " +
      "with its networking), which removes the host firewall its zones give. Set `disable` to " +
      "confirm, or `keep` to keep firewalld and open RKE2's and the CNI's ports in its zones " +
      "yourself; `up` then checks the TCP ones from every node's peers and stops, naming any " +
      "that are blocked.",
  );
}

function checkNodesOnSubnet(r: ConfigReader, model: EnvironmentModel): void {
  const subnet = parseCidr(model.libvirt.subnet);
  if (!subnet) return;
  model.nodes.forEach((node, i) => {
    if (cidrContains(subnet, node.ip)) return;
    r.problem(
      `nodes[${i}].ip`,
      `${node.ip} (${node.name}) is outside ${r.key("libvirt.subnet")} ${subnet.text}: the node is ` +
        `not on the libvirt network, so that network's DNS records (${r.key("libvirt.dnsRecords")}) ` +
        "do not answer its lookups unless its resolver is that network's dnsmasq. Correct the " +
        "address if it is a typo; otherwise give the node a resolver that has Rancher's name.",
    );
  });
}

/**
 * An admin kubeconfig every local user can read: `write-kubeconfig-mode` with the bit for
 * others set hands cluster-admin to any account on the server.
 */
function checkKubeconfigMode(r: ConfigReader, model: EnvironmentModel): void {
  const levels: [string, Rke2PassThrough | undefined][] = [
    ["rke2.extraConfig", model.management.extraConfig],
    ["rke2.serverConfig", model.management.serverConfig],
    ...model.nodes.map((n, i): [string, Rke2PassThrough | undefined] => [
      `nodes[${i}].extraConfig`,
      n.extraConfig,
    ]),
  ];
  for (const [path, level] of levels) {
    const mode = level?.["write-kubeconfig-mode"];
    if (mode === undefined || !/^[0-7]{3,4}$/.test(String(mode))) continue;
    if ((parseInt(String(mode), 8) & 0o004) === 0) continue;
    r.problem(
      `${path}.write-kubeconfig-mode`,
      `"${String(mode)}" lets every local user of the server read the admin kubeconfig ` +
        `(/etc/rancher/rke2/rke2.yaml), that is, act as cluster-admin. Use 0600, or 0640 with ` +
        `write-kubeconfig-group for a group that needs it.`,
    );
  }
}
