/**
 * `rancher` and its downstream clusters: the reader, the membership of each cluster, Rancher's
 * URL and the static DNS answer for its host.
 */
import {
  DeploySelection,
  DnsSettings,
  DownstreamClusterSpec,
  LibvirtSettings,
  MANAGEMENT_CLUSTER,
  NodeSpec,
  RancherSettings,
} from "../../components/model";
import { keyIsRead } from "./deploy-parts";
import { ConfigReader } from "./reader";
import { DOWNSTREAM_CLUSTER_KEYS } from "./stack-keys";
import { missingRoles, registrationPlan } from "../../components/rancher-cluster/registration";
import { readClusterSettings } from "./cluster-section";
import { secretShapeOf } from "./secret-checks";
import { K8S_NAME, isHostname } from "./values";

/**
 * `rancher`. The URL is required only where the stack registers clusters with Rancher
 * (`deploy.rancherClusters`) and it is not the management stack's, whose outputs are not at hand
 * (`urlNotAtHand`, reported on its own); without it, nothing in the estate answers or protects
 * Rancher's host by name. A downstream cluster's release is required where its DNS fix is computed.
 */
export function readRancher(
  r: ConfigReader,
  value: unknown,
  deploy: DeploySelection,
  urlNotAtHand = false,
): RancherSettings | undefined {
  const o = r.object(value, "rancher");
  if (!o) return undefined;
  const url =
    deploy.rancherClusters && !urlNotAtHand
      ? r.requiredString(o.url, "rancher.url", "set Rancher's server URL, e.g. https://ai-ear.cn.")
      : r.string(o.url, "rancher.url");
  let hostname: string | undefined;
  if (url !== undefined) {
    const m = /^https:\/\/([^/:]+)(:\d+)?\/?$/.exec(url);
    if (/:\/\/[^/]*@/.test(url)) {
      // Never echoed: the part before "@" is a user name and likely a password. One that
      // holds a password is reported by checkPlainSecrets.
      if (secretShapeOf(url) === undefined)
        r.problem(
          "rancher.url",
          "carries credentials before the host (https://user:password@...), which would be written in clear text to the stack file and to Pulumi's state; write only https://<hostname>[:port] and replace that password.",
        );
    } else if (!m || !isHostname(m[1])) {
      r.problem(
        "rancher.url",
        `"${url}" must be https://<hostname>[:port]; Rancher agents only trust HTTPS.`,
      );
    } else {
      hostname = m[1].toLowerCase();
    }
  }
  // Kept as the stack gives it: Rancher's --ca-checksum hashes the cacerts setting with its
  // trailing newline (rancher/rancher@v2.14.3 pkg/systemtemplate/import.go, CAChecksum), and a
  // trimmed PEM's checksum would never match.
  const caCertificate = r.text(o.caCertificate, "rancher.caCertificate");
  // A private key pasted here is reported by checkPlainSecrets, without echoing it.
  if (
    caCertificate !== undefined &&
    !caCertificate.includes("-----BEGIN CERTIFICATE-----") &&
    !/PRIVATE KEY-----/.test(caCertificate)
  ) {
    r.problem("rancher.caCertificate", "must be a PEM certificate (-----BEGIN CERTIFICATE-----).");
  }
  const list = r.array(o.downstreamClusters, "rancher.downstreamClusters") ?? [];
  const downstreamClusters: DownstreamClusterSpec[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const path = `rancher.downstreamClusters[${i}]`;
    const c = r.object(item, path) ?? {};
    const name = r.requiredString(c.name, `${path}.name`, "name the cluster as Rancher shows it.");
    if (name === undefined) return;
    if (!K8S_NAME.test(name) || name === MANAGEMENT_CLUSTER) {
      r.problem(
        `${path}.name`,
        `"${name}" must be a lowercase DNS label other than "${MANAGEMENT_CLUSTER}".`,
      );
    }
    if (seen.has(name))
      r.problem(`${path}.name`, `"${name}" is declared twice; cluster names must be unique.`);
    seen.add(name);
    const settings = readClusterSettings(r, c, path, name, keyIsRead(deploy, `${path}.version`));
    downstreamClusters.push({
      ...settings,
      insecureRegistration: DOWNSTREAM_CLUSTER_KEYS.insecureRegistration.read(
        r,
        c.insecureRegistration,
        `${path}.insecureRegistration`,
      ),
    });
  });
  if (url === undefined) {
    // Given and malformed, it is reported above; absent, it is reported when required.
    return o.url === undefined && (!deploy.rancherClusters || urlNotAtHand)
      ? { caCertificate, downstreamClusters }
      : undefined;
  }
  if (hostname === undefined) return undefined;
  return { url, hostname, caCertificate, downstreamClusters };
}

export function checkDownstreamMembership(
  r: ConfigReader,
  nodes: NodeSpec[],
  rancher: RancherSettings | undefined,
  caNotAtHand: boolean,
): void {
  rancher?.downstreamClusters.forEach((c, i) => {
    const members = nodes.filter((n) => n.cluster === c.name);
    // rancher/rancher@v2.14.3 pkg/capr/planner/planner.go (clusterIsSane): no node gets a plan
    // until an etcd, a controlplane and a worker node are registered.
    const missing = missingRoles(members);
    if (missing.length > 0) {
      r.problem(
        `rancher.downstreamClusters[${i}]`,
        `cluster "${c.name}" has no node with role ${missing.join(", ")}; Rancher delivers no plan to any node until an etcd, a controlplane and a worker node are registered (seed 000: nodes sit unprovisioned). Add one under nodes with cluster: ${c.name}.`,
      );
    } else {
      try {
        registrationPlan(members);
      } catch (err) {
        r.problem(`rancher.downstreamClusters[${i}]`, (err as Error).message);
      }
    }
    // The management stack's CA, when its outputs are not at hand, is reported with them.
    if (!c.insecureRegistration && rancher.caCertificate === undefined && !caNotAtHand) {
      r.problem(
        "rancher.caCertificate",
        `is not set; cluster "${c.name}" registers its nodes with Rancher's CA pinned by --ca-checksum. Set it to the CA exactly as Rancher serves it (curl -fsk https://<rancher>/cacerts), or opt in to rancher.downstreamClusters[${i}].insecureRegistration.`,
      );
    }
  });
}

/**
 * The cluster DNS answers the Rancher hostname from `dns.staticHosts`; Rancher runs on the
 * management servers, and a stack without them (a downstream-only stack) knows Rancher's
 * addresses from its libvirt records. An answer that differs sends cluster agents somewhere other
 * than nodes and browsers go. When the stack gives no answer for the Rancher host, the answer is
 * derived from the same source (seed 000: pods must reach Rancher without the search list);
 * returned as the static host entry to add.
 */
export function checkRancherStaticHosts(
  r: ConfigReader,
  dns: DnsSettings,
  libvirt: LibvirtSettings | undefined,
  rancher: RancherSettings | undefined,
  nodes: NodeSpec[],
  allNodesRead: boolean,
): Record<string, string[]> | undefined {
  // Comparing with the servers is only meaningful when every node entry was read.
  const host = rancher?.hostname;
  if (host === undefined || !allNodesRead) return undefined;
  const answered = dns.staticHosts[host];
  const staticKey = `dns.staticHosts["${host}"]`;
  const same = (a: readonly string[], b: readonly string[]) =>
    [...new Set(a)].sort().join(",") === [...new Set(b)].sort().join(",");
  const servers = nodes
    .filter((n) => n.cluster === MANAGEMENT_CLUSTER && n.roles.includes("server"))
    .map((n) => n.ip);
  const records = libvirt?.dnsRecords[host];
  if (answered === undefined) {
    const derived = servers.length > 0 ? servers : (records ?? []);
    return derived.length > 0 ? { [host]: [...derived] } : undefined;
  }
  if (servers.length > 0) {
    if (!same(answered, servers)) {
      r.problem(
        staticKey,
        `lists ${answered.join(", ") || "no address"}, but Rancher (${host}) runs on the management ` +
          `servers ${servers.join(", ")} (${r.key("nodes")}, role server); cluster agents would ` +
          "be sent elsewhere than nodes and browsers. List exactly the servers.",
      );
    }
  } else if (records !== undefined && !same(answered, records)) {
    r.problem(
      staticKey,
      `lists ${answered.join(", ") || "no address"}, but ${r.key(`libvirt.dnsRecords["${host}"]`)} ` +
        `lists ${records.join(", ") || "no address"}; pods and nodes would reach Rancher at ` +
        "different addresses. Make both list the same addresses.",
    );
  }
  return undefined;
}

/**
 * Rancher's node command carries its server-url setting's host as written
 * (rancher/rancher@v2.14.3:pkg/controllers/dashboard/clusterregistrationtoken/status.go,
 * getRootURL: url.Parse keeps the host's case), and registration compares it with
 * `rancher.url` exactly. Only a lowercase host is sure to match.
 */
export function checkRancherUrlHost(r: ConfigReader, value: unknown): void {
  const url = (value as { url?: unknown } | null | undefined)?.url;
  if (typeof url !== "string") return;
  const m = /^https:\/\/([^/:@]+)(?::(\d+))?\/?$/.exec(url.trim());
  if (!m || !isHostname(m[1])) return; // reported where it is read
  const [, host, port] = m;
  if (host !== host.toLowerCase()) {
    r.problem(
      "rancher.url",
      `the host "${host}" has capitals; Rancher's registration command carries its server-url host as written and registration compares the two exactly. Write it in lowercase (https://${host.toLowerCase()}), as Rancher's server-url setting has it.`,
    );
  }
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) {
    r.problem(
      "rancher.url",
      `port ${port} is outside 1-65535; write the port Rancher serves HTTPS on, or leave it out for 443.`,
    );
  }
}
