/**
 * Writes stacks/Pulumi.local.yaml: the lab's estate with the host keys the lab generated.
 * Keeps an existing file's encryption salt and secrets, so `lab up` can run again.
 *
 *   node bin/test/lab/write-local-stack.js --kvm-host-key "<line>" --nodes "20:server 31:etcd,controlplane"
 *     --node-host-key 20="<line>" ... --out stacks/Pulumi.local.yaml
 */
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";

const NS = "rke2-remediation";

export interface LabNode {
  readonly octet: string;
  readonly roles: string[];
  readonly hostKey: string;
}

/** Management servers and agents, then the downstream cluster uat1's nodes, as in the seeds. */
export function localStackConfig(
  kvmHostKey: string,
  nodes: readonly LabNode[],
  rancherCa?: string,
): Record<string, unknown> {
  const servers = nodes.filter((n) => n.roles.includes("server"));
  // uat1 is registered when the lab runs its Rancher stand-in (it needs a CA to pin).
  const downstream = nodes.some(
    (n) => n.roles.includes("etcd") && n.roles.includes("controlplane"),
  );
  return {
    [`${NS}:deploy`]: {
      libvirtDnsRecords: true,
      nodePreparation: true,
      rke2Servers: true,
      clusterDns: true,
      rancherClusters: rancherCa !== undefined && downstream,
    },
    [`${NS}:nodePreparation`]: { firewalld: "disable" },
    [`${NS}:libvirt`]: {
      ssh: { host: "192.168.122.1", user: "root", hostKey: kvmHostKey },
      network: "default",
      subnet: "192.168.122.0/24",
      dnsRecords: { "ai-ear.cn": servers.map((n) => `192.168.122.${n.octet}`) },
    },
    [`${NS}:nodes`]: nodes.map((n) => ({
      name: `sza122${n.octet.padStart(3, "0")}.local`,
      ip: `192.168.122.${n.octet}`,
      ...(n.roles.includes("server") || n.roles.includes("agent")
        ? { role: n.roles[0] }
        : { cluster: "uat1", roles: n.roles }),
      ssh: { user: "root", hostKey: n.hostKey },
    })),
    [`${NS}:rke2`]: {
      version: "v1.35.7+rke2r1",
      cni: "calico",
      clusterCidr: "10.12.0.0/16",
      serviceCidr: "10.13.0.0/16",
      kubeProxyMode: "ipvs",
      tlsSan: servers.map((n) => `192.168.122.${n.octet}`),
      privateRegistry: "192.168.122.156:30000",
      etcdSnapshot: { scheduleCron: "0 */6 * * *", retention: 5 },
      nodePortRange: "30000-60000",
      // The lab's stand-in for the RKE2 installer: rke2-server joins a real etcd.
      installCommand: `bash ${path.resolve(__dirname, "..", "..", "..", "test", "lab", "rke2-standin", "install.sh")}`,
      joinGate: { timeoutSeconds: 120, pollSeconds: 1 },
    },
    [`${NS}:rancher`]: {
      url: "https://ai-ear.cn",
      ...(rancherCa !== undefined ? { caCertificate: rancherCa } : {}),
      downstreamClusters: [
        {
          name: "uat1",
          version: "v1.35.7+rke2r1",
          cni: "calico",
          joinGate: { timeoutSeconds: 120, pollSeconds: 1 },
        },
      ],
    },
    [`${NS}:dns`]: {
      staticHosts: { "ai-ear.cn": servers.map((n) => `192.168.122.${n.octet}`) },
      neutralizedSearchDomains: ["local"],
      nodeLocal: { enabled: true, ip: "169.254.20.10" },
      upstreamResolvers: ["192.168.122.1"],
      // The lab's default namespace runs nothing and restricts nothing: opted in to becoming
      // default-deny egress except DNS, or `up` refuses the policy there.
      policyNamespaces: [{ name: "default", isolate: true }],
    },
  };
}

function main(argv: readonly string[]): void {
  let kvmHostKey = "";
  let out = "";
  let nodeSpec = "";
  let rancherCa: string | undefined;
  const hostKeys = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === "--kvm-host-key") kvmHostKey = value;
    else if (flag === "--out") out = value;
    else if (flag === "--nodes") nodeSpec = value;
    else if (flag === "--rancher-ca") rancherCa = fs.readFileSync(value, "utf8");
    else if (flag === "--node-host-key")
      hostKeys.set(value.split("=")[0], value.slice(value.indexOf("=") + 1));
    else throw new Error(`unknown flag ${flag}`);
  }
  const nodes = nodeSpec
    .trim()
    .split(/\s+/)
    .map((entry) => {
      const [octet, roles] = entry.split(":");
      const hostKey = hostKeys.get(octet);
      if (!hostKey) throw new Error(`no host key given for node ${octet}`);
      return { octet, roles: roles.split(","), hostKey };
    });
  const existing = fs.existsSync(out)
    ? ((YAML.parse(fs.readFileSync(out, "utf8")) ?? {}) as Record<string, unknown>)
    : {};
  const oldConfig = (existing.config ?? {}) as Record<string, unknown>;
  const secrets = Object.fromEntries(
    Object.entries(oldConfig).filter(
      ([, v]) => typeof v === "object" && v !== null && "secure" in v,
    ),
  );
  const doc: Record<string, unknown> = {};
  for (const key of ["secretsprovider", "encryptedkey", "encryptionsalt"]) {
    if (existing[key] !== undefined) doc[key] = existing[key];
  }
  doc.config = { ...localStackConfig(kvmHostKey, nodes, rancherCa), ...secrets };
  const header =
    "# Generated by `npm run lab -- up` for the lab's estate; removed by `lab down`.\n";
  fs.writeFileSync(out, header + YAML.stringify(doc));
}

if (require.main === module) main(process.argv.slice(2));
