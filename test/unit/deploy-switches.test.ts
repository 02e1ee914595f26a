/**
 * The `deploy.*` switches mean what they say: with a part turned off, the keys only that part
 * reads are not required, given anyway they are a warning that they are unused, and `render`
 * writes none of that part's files. Each case starts from the lab stack, turns one part off and
 * changes only the keys that part reads; the last one is the smallest useful stack, node
 * preparation and the libvirt records only.
 */
import * as assert from "assert/strict";
import { EnvironmentModel, SECRET_KEYS } from "../../components/model";
import { DEPLOY_PARTS, DeployPart, KEY_READERS } from "../../infra/config/deploy-parts";
import { ConfigProblem } from "../../infra/config/problems";
import { configWarnings, validateEnvironment } from "../../infra/config/validate";
import { isSetting, KeyMap, KeySchema, STACK_CONFIG_KEYS } from "../../infra/config/stack-keys";
import { Artifact, renderArtifacts } from "../../infra/render";
import { MutableRawConfig } from "../support/lab-stack";
import { preparationAndRecordsStack } from "../support/minimal-stack";
import { estateRawConfigWithSecrets, setAt, stackKey } from "./fixtures";

/** The lab stack, every secret set, with one part turned off. */
function labWithout(part: DeployPart): MutableRawConfig {
  return setAt(estateRawConfigWithSecrets(), ["deploy", part], false);
}

/** Removes keys (paths) and secrets from a config. */
function withoutKeys(raw: MutableRawConfig, ...paths: string[]): MutableRawConfig {
  for (const p of paths) {
    if ((SECRET_KEYS as readonly string[]).includes(p)) raw.secretKeys.delete(p);
    else setAt(raw, p, undefined);
  }
  return raw;
}

/** The model of a config that must validate as a deployment does, with its secrets required. */
function deployable(raw: MutableRawConfig): EnvironmentModel {
  const { model, problems } = validateEnvironment("lab", raw, { requireSecrets: true });
  assert.deepEqual(problems, []);
  assert.ok(model);
  return model;
}

/**
 * The warnings of a deployable stack, but the one on its single upstream resolver, which every
 * lab-based stack earns (the libvirt network's dnsmasq) and dns-policy-namespaces.test.ts checks.
 */
function warningsOf(raw: MutableRawConfig): ConfigProblem[] {
  return configWarnings(deployable(raw), raw).filter(
    (w) => w.key !== stackKey("dns.upstreamResolvers"),
  );
}

/** Asserts the warnings are exactly "unused" ones at `paths`, each naming `switches`. */
function assertUnused(
  warnings: readonly ConfigProblem[],
  paths: readonly string[],
  switches: readonly DeployPart[],
): void {
  assert.deepEqual(
    warnings.map((w) => w.key).sort(),
    paths.map(stackKey).sort(),
    JSON.stringify(warnings, null, 2),
  );
  for (const w of warnings) {
    assert.match(w.message, /^is unused because /, w.message);
    for (const part of switches) {
      assert.ok(w.message.includes(stackKey(`deploy.${part}`)), w.message);
    }
    assert.match(w.message, / false, and only th(at part reads|ose parts read) it/, w.message);
  }
}

function paths(artifacts: readonly Artifact[]): string[] {
  return artifacts.map((a) => a.path);
}

describe("deploy switches", () => {
  describe("deploy.libvirtDnsRecords off", () => {
    it("needs neither the KVM host nor the libvirt section at all", () => {
      deployable(withoutKeys(labWithout("libvirtDnsRecords"), "libvirt.ssh", "libvirt.network"));
      deployable(withoutKeys(labWithout("libvirtDnsRecords"), "libvirt"));
    });

    it("still requires the KVM host when it is on", () => {
      const raw = withoutKeys(estateRawConfigWithSecrets(), "libvirt.ssh");
      const keys = validateEnvironment("lab", raw, { requireSecrets: true }).problems.map(
        (p) => p.key,
      );
      for (const key of ["libvirt.ssh.host", "libvirt.ssh.hostKey"]) {
        assert.ok(keys.includes(stackKey(key)), keys.join("\n"));
      }
    });

    it("warns that the KVM host and network name are unused, not the records the DNS reads", () => {
      assertUnused(
        warningsOf(labWithout("libvirtDnsRecords")),
        ["libvirt.ssh", "libvirt.network"],
        ["libvirtDnsRecords"],
      );
    });

    it("renders no libvirt record file", () => {
      const rendered = renderArtifacts(deployable(labWithout("libvirtDnsRecords")));
      assert.ok(rendered.length > 0);
      assert.deepEqual(
        rendered.filter((a) => a.kind === "libvirt-dns-host-xml" || a.path.startsWith("libvirt/")),
        [],
      );
    });
  });

  describe("deploy.nodePreparation off", () => {
    it("validates the lab stack without its nodePreparation section", () => {
      const raw = withoutKeys(labWithout("nodePreparation"), "nodePreparation");
      assert.equal(raw.values.nodePreparation, undefined);
      deployable(raw);
    });

    it("warns once that the whole nodePreparation section is unused", () => {
      const raw = setAt(labWithout("nodePreparation"), "nodePreparation", {
        unmanagedDevices: ["kube-ipvs0", "cali*"],
        bringUpKubeIpvs: true,
      });
      assertUnused(warningsOf(raw), ["nodePreparation"], ["nodePreparation"]);
    });

    it("renders no node preparation script", () => {
      const rendered = renderArtifacts(deployable(labWithout("nodePreparation")));
      assert.deepEqual(
        rendered.filter((a) => a.kind === "node-preparation-script" || a.path.startsWith("nodes/")),
        [],
      );
    });
  });

  describe("deploy.rke2Servers off", () => {
    // The keys only RKE2 on the management nodes reads; version, CNI, service CIDR, cluster
    // domain and kube-proxy mode are also read by node preparation or the DNS fix.
    const rke2Only = [
      "rke2.clusterCidr",
      "rke2.tlsSan",
      "rke2.privateRegistry",
      "rke2.etcdSnapshot",
      "rke2.nodePortRange",
    ];

    it("needs neither the join token nor the keys only RKE2 reads", () => {
      deployable(withoutKeys(labWithout("rke2Servers"), "rke2Token", ...rke2Only));
    });

    it("still requires the join token when it is on", () => {
      const raw = withoutKeys(estateRawConfigWithSecrets(), "rke2Token");
      const keys = validateEnvironment("lab", raw, { requireSecrets: true }).problems.map(
        (p) => p.key,
      );
      assert.deepEqual(keys, [stackKey("rke2Token")]);
    });

    it("warns that the join token, the registry credentials and those keys are unused", () => {
      assertUnused(
        warningsOf(labWithout("rke2Servers")),
        [...rke2Only, "rke2Token", "registryAuth"],
        ["rke2Servers"],
      );
    });

    it("renders no config.yaml and no restart plan", () => {
      const rendered = renderArtifacts(deployable(labWithout("rke2Servers")));
      assert.deepEqual(paths(rendered.filter((a) => a.path.startsWith("rke2/"))), []);
      assert.ok(
        !rendered.some((a) =>
          ["rke2-server-config", "rke2-agent-config", "rke2-restart-plan"].includes(a.kind),
        ),
      );
    });
  });

  describe("deploy.clusterDns off", () => {
    /** The lab delivering its DNS fix through the Kubernetes API, which needs the kubeconfig. */
    const throughApi = (raw: MutableRawConfig) => setAt(raw, "rke2.dnsDelivery", "helmChartConfig");

    it("needs no kubeconfig for a helmChartConfig delivery it does not make", () => {
      deployable(withoutKeys(throughApi(labWithout("clusterDns")), "kubeconfig"));
    });

    it("still requires the kubeconfig when it is on", () => {
      const raw = withoutKeys(throughApi(estateRawConfigWithSecrets()), "kubeconfig");
      const keys = validateEnvironment("lab", raw, { requireSecrets: true }).problems.map(
        (p) => p.key,
      );
      assert.deepEqual(keys, [stackKey("kubeconfig")]);
    });

    it("warns that the delivery and the kubeconfig are unused", () => {
      assertUnused(
        warningsOf(throughApi(labWithout("clusterDns"))),
        ["rke2.dnsDelivery", "kubeconfig"],
        ["clusterDns"],
      );
    });

    it("renders none of the management cluster's DNS files, and still uat1's chartValues", () => {
      const rendered = paths(renderArtifacts(deployable(labWithout("clusterDns"))));
      assert.deepEqual(
        rendered.filter((p) => p.startsWith("dns/management/")),
        [],
      );
      // Rancher registration carries uat1's DNS fix whatever clusterDns says.
      assert.ok(rendered.includes("dns/uat1/Corefile"), rendered.join("\n"));
      assert.ok(rendered.includes("rancher/uat1/chart-values.yaml"), rendered.join("\n"));
    });
  });

  describe("deploy.rancherClusters off", () => {
    const rancherOnly = [
      "rancher.url",
      "rancher.caCertificate",
      "nodes[3].roles",
      "nodes[4].roles",
      "rancherToken",
    ];

    it("needs neither Rancher's URL, CA and token nor the downstream nodes' roles", () => {
      deployable(withoutKeys(labWithout("rancherClusters"), ...rancherOnly));
    });

    it("still requires the downstream nodes' roles when it is on", () => {
      const raw = withoutKeys(estateRawConfigWithSecrets(), "nodes[4].roles");
      const keys = validateEnvironment("lab", raw, { requireSecrets: true }).problems.map(
        (p) => p.key,
      );
      assert.ok(keys.includes(stackKey("nodes[4].role")), keys.join("\n"));
    });

    it("warns that the token and the downstream roles are unused, not the URL and CA the stack's `rancher` output carries", () => {
      assertUnused(
        warningsOf(labWithout("rancherClusters")),
        ["nodes[3].roles", "nodes[4].roles", "rancherToken"],
        ["rancherClusters"],
      );
    });

    it("renders no Rancher file", () => {
      const rendered = renderArtifacts(deployable(labWithout("rancherClusters")));
      assert.deepEqual(
        rendered.filter((a) => a.kind.startsWith("rancher-") || a.path.startsWith("rancher/")),
        [],
      );
    });
  });

  describe("a node off the libvirt network", () => {
    it("validates, and is warned about by its key, address and name", () => {
      const raw = estateRawConfigWithSecrets();
      const nodes = raw.values.nodes as { ip: string; name: string }[];
      const last = nodes.length - 1;
      setAt(raw, `nodes[${last}].ip`, "10.20.0.5");
      const warnings = warningsOf(raw).filter((w) => w.key === stackKey(`nodes[${last}].ip`));
      assert.equal(warnings.length, 1, JSON.stringify(warningsOf(raw)));
      assert.match(
        warnings[0].message,
        /10\.20\.0\.5 \(.+\) is outside .*libvirt\.subnet 192\.168\.122\.0\/24/,
      );
      assert.ok(warnings[0].message.includes(nodes[last].name));
    });

    it("is not warned about while every node is on the subnet", () => {
      const raw = estateRawConfigWithSecrets();
      assert.deepEqual(
        warningsOf(raw).filter((w) => /^rke2-remediation:nodes\[\d+\]\.ip$/.test(w.key)),
        [],
      );
    });
  });

  describe("a stack of node preparation and the libvirt records only", () => {
    it("validates with the SSH key as its only secret, and warns about nothing", () => {
      const raw = preparationAndRecordsStack();
      const model = deployable(raw);
      assert.deepEqual(configWarnings(model, raw), []);
      assert.deepEqual(
        model.nodes.map((n) => [n.name, n.roles]),
        [
          ["sza122020.local", []],
          ["sza122021.local", []],
          ["sza122022.local", []],
        ],
      );
    });

    it("warns about the release, roles, resolvers and token a larger stack would need", () => {
      const raw = preparationAndRecordsStack();
      setAt(raw, "rke2", { version: "v1.35.7+rke2r1", tlsSan: ["192.168.122.20"] });
      setAt(raw, "dns", { upstreamResolvers: ["192.168.122.1"] });
      raw.secretKeys.add("rke2Token");
      const warnings = configWarnings(deployable(raw), raw);
      assert.deepEqual(
        warnings.map((w) => w.key),
        ["rke2.version", "rke2.tlsSan", "dns.upstreamResolvers", "rke2Token"].map(stackKey),
      );
      assert.ok(warnings[0].message.includes(stackKey("deploy.rke2Servers")));
      assert.ok(warnings[0].message.includes(stackKey("deploy.clusterDns")));
    });

    it("warns, before up stops firewalld, until the stack chooses nodePreparation.firewalld", () => {
      const raw = preparationAndRecordsStack();
      setAt(raw, "nodePreparation", undefined);
      const [warning, ...rest] = configWarnings(deployable(raw), raw);
      assert.deepEqual(rest, []);
      assert.equal(warning.key, stackKey("nodePreparation.firewalld"));
      assert.match(warning.message, /not set, so `disable`: .* disables it, and stops it/);
      assert.match(warning.message, /Set `disable` to confirm, or `keep` to keep firewalld/);
      for (const choice of ["disable", "keep"]) {
        setAt(raw, "nodePreparation", { firewalld: choice });
        assert.deepEqual(configWarnings(deployable(raw), raw), [], choice);
      }
      setAt(raw, "nodePreparation", { firewalld: "stop" });
      const { problems } = validateEnvironment("lab", raw, { requireSecrets: true });
      assert.deepEqual(
        problems.map((p) => p.key),
        [stackKey("nodePreparation.firewalld")],
      );
    });

    it("renders the records and each node's preparation script, nothing else", () => {
      assert.deepEqual(paths(renderArtifacts(deployable(preparationAndRecordsStack()))), [
        "libvirt/dns-hosts.xml",
        "nodes/sza122020.local/prepare-node.sh",
        "nodes/sza122021.local/prepare-node.sh",
        "nodes/sza122022.local/prepare-node.sh",
      ]);
    });
  });

  describe("the table of which parts read which key", () => {
    /** Whether the stack config declares the table's path (`[]` for a list's entries). */
    function declared(path: string): boolean {
      let schema: KeySchema = STACK_CONFIG_KEYS;
      for (const segment of path.split(".")) {
        if (isSetting(schema) || Array.isArray(schema)) return false;
        const list = segment.endsWith("[]");
        const next: KeySchema | undefined = (schema as KeyMap)[segment.replace(/\[\]$/, "")];
        if (next === undefined) return false;
        if (list) {
          if (!Array.isArray(next)) return false;
          schema = (next as readonly [KeySchema])[0];
        } else schema = next;
      }
      return true;
    }

    it("names only keys the stack config declares, and only known parts", () => {
      for (const [path, readers] of Object.entries(KEY_READERS)) {
        assert.ok(declared(path), `${path} is not a stack config key`);
        const parts =
          typeof readers === "function"
            ? [...readers({}), ...readers({ cluster: "uat1" })]
            : readers;
        for (const part of parts) assert.ok(DEPLOY_PARTS.includes(part), `${path}: ${part}`);
      }
    });
  });
});
