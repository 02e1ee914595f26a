import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/stack-file";
import * as assert from "assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { MANAGEMENT_CLUSTER, serversOf } from "../../components/model";
import { ConfigProblem } from "../../infra/config/problems";
import {
  configWarnings,
  loadEnvironmentModel,
  validateEnvironment,
} from "../../infra/config/validate";
import {
  isListSchema,
  isSetting,
  KeySchema,
  STACK_SETTINGS_KEYS,
} from "../../infra/config/stack-keys";
import {
  estateModel,
  estateRawConfig,
  labManagementOutputs,
  uat1RawConfig,
  uat1StandaloneRawConfig,
} from "../support/lab-stack";
import {
  getAt,
  estateRawConfigWithSecrets,
  estateWith,
  problemsOf,
  setAt,
  stackKey,
} from "./fixtures";

/** Every setting a declaration map holds, as a config path (`a.b`, `list[0].c`). */
function declaredSettingPaths(schema: KeySchema, at = ""): string[] {
  if (isSetting(schema)) return [at];
  if (isListSchema(schema)) return declaredSettingPaths(schema[0], `${at}[0]`);
  return Object.entries(schema).flatMap(([key, inner]) =>
    declaredSettingPaths(inner, at === "" ? key : `${at}.${key}`),
  );
}

/** The one problem reported under `path`; fails when there is none or more than one. */
function problemAt(problems: readonly ConfigProblem[], path: string): ConfigProblem {
  const key = stackKey(path);
  const found = problems.filter((p) => p.key === key);
  assert.equal(
    found.length,
    1,
    `expected one problem at ${key}, got:\n${problems.map((p) => `  ${p.key}: ${p.message}`).join("\n")}`,
  );
  return found[0];
}

describe("stack config validation", () => {
  describe("the compliant lab stack", () => {
    it("validates with no problems", () => {
      const { model, problems } = validateEnvironment("lab", estateRawConfig(), {
        requireSecrets: false,
      });
      assert.deepEqual(problems, []);
      assert.ok(model);
    });

    it("describes three management servers and the downstream cluster uat1", () => {
      const model = estateModel();
      assert.deepEqual(
        serversOf(model).map((n) => n.ip),
        ["192.168.122.20", "192.168.122.21", "192.168.122.22"],
      );
      assert.equal(model.management.name, MANAGEMENT_CLUSTER);
      assert.deepEqual(
        model.rancher?.downstreamClusters.map((c) => c.name),
        ["uat1"],
      );
    });

    it("derives kube-dns as the 10th address of each cluster's service CIDR", () => {
      const model = estateModel();
      assert.equal(model.management.clusterDnsIp, "10.13.0.10");
      assert.equal(model.rancher?.downstreamClusters[0].clusterDnsIp, "10.43.0.10");
    });

    it("validates with every secret stored as a Pulumi secret when secrets are required", () => {
      assert.deepEqual(problemsOf(estateRawConfigWithSecrets(), { requireSecrets: true }), []);
    });
  });

  describe("addresses and networks", () => {
    it("rejects a malformed node IP at the node's ip key", () => {
      const problem = problemAt(
        problemsOf(estateWith("nodes[1].ip", "192.168.122.300")),
        "nodes[1].ip",
      );
      assert.match(problem.message, /"192\.168\.122\.300" is not an IPv4 address/);
      assert.match(problem.message, /write four dotted numbers/);
    });

    it("rejects a CIDR whose prefix is longer than 32", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.clusterCidr", "10.12.0.0/33")),
        "rke2.clusterCidr",
      );
      assert.match(problem.message, /"10\.12\.0\.0\/33" is not a network in CIDR form/);
      assert.match(problem.message, /write the network address and prefix/);
    });

    it("rejects a CIDR with host bits set", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.clusterCidr", "10.12.0.1/16")),
        "rke2.clusterCidr",
      );
      assert.match(problem.message, /"10\.12\.0\.1\/16" is not a network in CIDR form/);
      assert.match(problem.message, /write the network address/);
    });

    it("names the network a CIDR with host bits set belongs to", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.clusterCidr", "10.100.5.0/16")),
        "rke2.clusterCidr",
      );
      assert.match(
        problem.message,
        /host bits set for \/16: write the network address, 10\.100\.0\.0\/16, or a longer prefix/,
      );
    });

    it("rejects a service CIDR that overlaps the cluster CIDR", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.serviceCidr", "10.12.128.0/17")),
        "rke2.clusterCidr",
      );
      assert.match(problem.message, /10\.12\.0\.0\/16 overlaps 10\.12\.128\.0\/17/);
      assert.ok(problem.message.includes(stackKey("rke2.serviceCidr")), problem.message);
      assert.match(problem.message, /must be disjoint/);
    });

    it("rejects a cluster CIDR that overlaps the libvirt node subnet", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.clusterCidr", "192.168.0.0/16")),
        "rke2.clusterCidr",
      );
      assert.match(problem.message, /192\.168\.0\.0\/16 overlaps 192\.168\.122\.0\/24/);
      assert.ok(problem.message.includes(stackKey("libvirt.subnet")), problem.message);
      assert.match(problem.message, /must be disjoint/);
    });
  });

  describe("libvirt network", () => {
    it("rejects a network name that virsh would read as an option", () => {
      const problem = problemAt(
        problemsOf(estateWith("libvirt.network", "--help")),
        "libvirt.network",
      );
      assert.match(problem.message, /"--help" is not a libvirt network name/);
      assert.match(problem.message, /virsh net-list --all/);
    });

    it("accepts a network name with dots, dashes and underscores", () => {
      assert.deepEqual(problemsOf(estateWith("libvirt.network", "lab_net-2.a")), []);
    });
  });

  describe("nodes", () => {
    it("hints that cluster: is missing on a node with a downstream cluster's roles, naming the node", () => {
      const raw = uat1StandaloneRawConfig();
      setAt(raw, "nodes[0].cluster", undefined);
      const { problems } = validateEnvironment("uat1", raw, { requireSecrets: false });
      const problem = problemAt(problems, "nodes[0].roles");
      const name = getAt(raw, "nodes[0].name") as string;
      assert.ok(problem.message.startsWith(`node ${name}: `), problem.message);
      assert.match(
        problem.message,
        /a downstream cluster's roles, and the node has no nodes\[0\]\.cluster, .*set its cluster \("uat1"\)/,
      );
    });

    it("rejects a node name used twice, naming the first node", () => {
      const problem = problemAt(
        problemsOf(estateWith("nodes[1].name", "sza122020.local")),
        "nodes[1].name",
      );
      assert.match(problem.message, /"sza122020\.local" is also nodes\[0\]/);
      assert.match(problem.message, /must be unique/);
    });

    it("rejects a node IP used twice, naming the first node", () => {
      const problem = problemAt(
        problemsOf(estateWith("nodes[1].ip", "192.168.122.20")),
        "nodes[1].ip",
      );
      assert.match(problem.message, /192\.168\.122\.20 is also nodes\[0\]\.ip/);
      assert.match(problem.message, /must be unique/);
    });

    it("rejects a node without a pinned SSH host key and says where to read it", () => {
      const problem = problemAt(
        problemsOf(estateWith("nodes[0].ssh.hostKey", undefined)),
        "nodes[0].ssh.hostKey",
      );
      assert.match(problem.message, /sza122020\.local has no pinned host key/);
      assert.match(problem.message, /\/etc\/ssh\/ssh_host_ed25519_key\.pub/);
    });

    it("rejects a pinned host key with one wrong character, naming the node's key", () => {
      const shipped =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLXN6YTEyMjAyMC0tLS0tLS0tLS0t";
      // The length of the key's type name, 11, written as 12: a key no SSH server sends.
      const message = onlyProblemAt(
        estateWith("nodes[0].ssh.hostKey", shipped.replace("AAAAC3Nz", "AAAADHNz")),
        "nodes[0].ssh.hostKey",
      );
      assert.match(message, /sza122020\.local is not a valid key/);
      assert.match(message, /ssh_host_\*_key\.pub/);
    });

    it("requires at least one server in the management cluster", () => {
      const raw = estateRawConfig();
      for (const i of [0, 1, 2]) setAt(raw, `nodes[${i}].role`, "agent");
      const problem = problemAt(problemsOf(raw), "nodes");
      assert.match(problem.message, /no node with role "server" in the management cluster/);
    });

    it("rejects an unknown role and lists the known ones", () => {
      const problem = problemAt(problemsOf(estateWith("nodes[0].role", "master")), "nodes[0].role");
      assert.match(problem.message, /unknown role\(s\) "master"/);
      assert.match(problem.message, /use one of server, agent, etcd, controlplane, worker/);
    });
  });

  describe("RKE2 settings", () => {
    it("refuses pass-through settings that reset, move or split etcd, or undo a declared fix", () => {
      for (const [path, value, why] of [
        ["rke2.serverConfig.data-dir", "/data/rke2", /starts an empty etcd member/],
        ["rke2.extraConfig.cluster-reset", true, /resets etcd to a one-member cluster/],
        [
          "nodes[0].extraConfig.cluster-reset-restore-path",
          "/snap/x",
          /restores etcd from a snapshot/,
        ],
        ["rke2.extraConfig.with-node-id", true, /register a new Node and etcd member/],
        ["rke2.extraConfig.disable", ["rke2-ingress-nginx", "rke2-coredns"], /lists rke2-coredns/],
        ["rke2.serverConfig.disable-kube-proxy", true, /removes kube-proxy/],
      ] as const) {
        const message = onlyProblemAt(estateWith(path, value), path);
        assert.match(message, why);
        assert.match(message, /Remove it from (rke2|nodes\[0\])\.\w+\.$/);
      }
      assert.deepEqual(
        problemsOf(estateWith("rke2.extraConfig.disable", ["rke2-ingress-nginx"])),
        [],
      );
    });

    it("warns of an admin kubeconfig every local user can read", () => {
      const warned = (mode: string) => {
        const raw = estateWith("rke2.serverConfig.write-kubeconfig-mode", mode);
        const { model } = validateEnvironment("lab", raw, { requireSecrets: false });
        assert.ok(model);
        return configWarnings(model, raw).filter(
          (w) => w.key === stackKey("rke2.serverConfig.write-kubeconfig-mode"),
        );
      };
      assert.match(
        warned("0644")[0]?.message ?? "",
        /every local user of the server read the admin kubeconfig/,
      );
      assert.deepEqual(warned("0640"), []);
    });

    it("accepts `name+` settings with RKE2's meaning, and holds them to the same rules as `name`", () => {
      assert.deepEqual(
        problemsOf(estateWith("nodes[1].extraConfig.kubelet-arg+", ["max-pods=250"])),
        [],
      );
      assert.match(
        onlyProblemAt(
          estateWith("rke2.extraConfig.tls-san+", ["x.example"]),
          "rke2.extraConfig.tls-san+",
        ),
        /is a setting the product manages; set it through rke2\.tlsSan instead/,
      );
      assert.match(
        onlyProblemAt(
          estateWith("rke2.extraConfig.kube-proxy-arg+", ["proxy-mode=iptables"]),
          "rke2.extraConfig.kube-proxy-arg+",
        ),
        /sets proxy-mode, which the product renders from rke2\.kubeProxyMode/,
      );
    });

    it("names a list item by its own place when an item before it is not text", () => {
      const raw = estateWith("rke2.tlsSan", [5, "not a name"]);
      assert.deepEqual(
        problemsOf(raw).map((p) => p.key),
        [stackKey("rke2.tlsSan[0]")],
      );
    });

    it("reports a registration address that is not text once", () => {
      assert.deepEqual(
        problemsOf(estateWith("rke2.registrationAddress", 5)).map((p) => [p.key, p.message]),
        [[stackKey("rke2.registrationAddress"), "must be a non-empty string, found 5."]],
      );
    });

    it("reports a version left out or written empty once, as missing", () => {
      for (const version of [undefined, ""]) {
        const problems = problemsOf(estateWith("rke2.version", version));
        assert.deepEqual(
          problems.map((p) => [p.key, p.message]),
          [
            [
              stackKey("rke2.version"),
              "is missing; set the RKE2 release to install, e.g. v1.35.7+rke2r1.",
            ],
          ],
          JSON.stringify(version),
        );
      }
    });

    it("accepts a tls-san without the servers' own addresses (RKE2 adds them itself)", () => {
      assert.deepEqual(problemsOf(estateWith("rke2.tlsSan", undefined)), []);
    });

    it("accepts a registration address that tls-san lists, keeping it in the model", () => {
      const raw = estateWith("rke2.registrationAddress", "RKE2.ai-ear.cn");
      setAt(raw, "rke2.tlsSan", ["rke2.ai-ear.cn"]);
      assert.equal(estateModel(raw).management.registrationAddress, "rke2.ai-ear.cn");
    });

    it("requires the registration address in tls-san, naming both keys and what to add", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.registrationAddress", "192.168.122.100")),
        "rke2.tlsSan",
      );
      assert.match(problem.message, /does not list rke2-remediation:rke2\.registrationAddress/);
      assert.match(problem.message, /add "192\.168\.122\.100" to rke2\.tlsSan/);
    });

    it("rejects a registration address that is neither an IPv4 address nor a DNS name", () => {
      for (const bad of ["192.168.122.300", "https://rke2.ai-ear.cn", "rke2_vip"]) {
        const raw = estateWith("rke2.registrationAddress", bad);
        setAt(raw, "rke2.tlsSan", [bad]);
        const problem = problemAt(problemsOf(raw), "rke2.registrationAddress");
        assert.match(problem.message, /is neither an IPv4 address nor a DNS name/, bad);
      }
    });

    it("rejects a registration address that is a node's own address", () => {
      const raw = estateWith("rke2.registrationAddress", "192.168.122.21");
      const problem = problemAt(problemsOf(raw), "rke2.registrationAddress");
      assert.match(
        problem.message,
        /node sza122021\.local, and a server cannot join through itself/,
      );
    });

    it("rejects a registration address on a downstream cluster", () => {
      const problem = problemAt(
        problemsOf(
          estateWith("rancher.downstreamClusters[0].registrationAddress", "uat1.ai-ear.cn"),
        ),
        "rancher.downstreamClusters[0].registrationAddress",
      );
      assert.match(problem.message, /is not a setting this program uses here/);
    });

    it("rejects a version that is not an RKE2 release and shows the right form", () => {
      const problem = problemAt(problemsOf(estateWith("rke2.version", "1.35.6")), "rke2.version");
      assert.match(problem.message, /"1\.35\.6" is not an RKE2 release/);
      assert.match(problem.message, /e\.g\. v1\.35\.7\+rke2r1/);
    });
  });

  describe("cluster DNS", () => {
    it("rejects an invalid hostname among the static hosts", () => {
      const problem = problemAt(
        problemsOf(estateWith("dns.staticHosts", { "ai_ear.cn": ["192.168.122.20"] })),
        'dns.staticHosts["ai_ear.cn"]',
      );
      assert.match(problem.message, /"ai_ear\.cn" is not a valid DNS name; fix the hostname/);
    });

    it("rejects a NodeLocalDNS address inside the service CIDR", () => {
      const problem = problemAt(
        problemsOf(estateWith("dns.nodeLocal.ip", "10.13.0.53")),
        "dns.nodeLocal.ip",
      );
      assert.match(problem.message, /10\.13\.0\.53 lies inside 10\.13\.0\.0\/16/);
      assert.match(problem.message, /pick a link-local address such as 169\.254\.20\.10/);
    });

    it("rejects forwarding to the cluster's own DNS address as a loop", () => {
      const problem = problemAt(
        problemsOf(estateWith("dns.upstreamResolvers", ["10.13.0.10"])),
        "dns.upstreamResolvers[0]",
      );
      assert.match(problem.message, /10\.13\.0\.10 is the cluster DNS of management/);
      assert.match(problem.message, /loop/);
      assert.match(problem.message, /Use the nodes' real resolvers/);
    });

    it("rejects forwarding to the NodeLocalDNS address as a loop", () => {
      const problem = problemAt(
        problemsOf(estateWith("dns.upstreamResolvers", ["169.254.20.10"])),
        "dns.upstreamResolvers[0]",
      );
      assert.match(problem.message, /169\.254\.20\.10 is the NodeLocalDNS address/);
      assert.match(problem.message, /Use the nodes' real resolvers/);
    });
  });

  describe("RKE2 release and its rke2-coredns chart", () => {
    it("rejects a release whose chart lacks extraClusterDomains while NodeLocalDNS carries fix zones", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.version", "v1.35.6+rke2r1")),
        "rke2.version",
      );
      assert.match(problem.message, /v1\.35\.6\+rke2r1 ships rke2-coredns 1\.46\.002/);
      assert.match(problem.message, /no nodelocal\.extraClusterDomains/);
      assert.match(problem.message, /would send local, ai-ear\.cn to the node's resolvers/);
      assert.ok(problem.message.includes(stackKey("dns.nodeLocal.enabled")), problem.message);
      assert.match(problem.message, /Use v1\.35\.7\+rke2r1 or later on the v1\.35 line/);
    });

    it("checks a downstream cluster's release the same way, naming its line's first fixed release", () => {
      const problem = problemAt(
        problemsOf(estateWith("rancher.downstreamClusters[0].version", "v1.34.9+rke2r1")),
        "rancher.downstreamClusters[0].version",
      );
      assert.match(problem.message, /ships rke2-coredns 1\.46\.002/);
      assert.match(problem.message, /Use v1\.34\.10\+rke2r1 or later on the v1\.34 line/);
    });

    it("accepts the old release when NodeLocalDNS is off", () => {
      const raw = estateWith("rke2.version", "v1.35.6+rke2r1");
      setAt(raw, "rancher.downstreamClusters[0].version", "v1.33.13+rke2r1");
      setAt(raw, "dns.nodeLocal.enabled", false);
      assert.deepEqual(problemsOf(raw), []);
    });

    it("rejects a release the table does not list, naming the table's module", () => {
      const problem = problemAt(
        problemsOf(estateWith("rke2.version", "v1.35.8+rke2r1")),
        "rke2.version",
      );
      assert.match(problem.message, /"v1\.35\.8\+rke2r1" is not in the RKE2 release table/);
      assert.match(problem.message, /components\/cluster-dns\/chart-releases\.ts/);
      assert.match(problem.message, /charts\/chart_versions\.yaml/);
      assert.match(problem.message, /newest on v1\.35: v1\.35\.7\+rke2r1/);
    });

    it("rejects a release of a line the table does not cover, naming the lines it does", () => {
      const raw = estateWith("rancher.downstreamClusters[0].version", "v1.32.13+rke2r2");
      setAt(raw, "dns.nodeLocal.enabled", false);
      const problem = problemAt(problemsOf(raw), "rancher.downstreamClusters[0].version");
      assert.match(problem.message, /lines v1\.33, v1\.34, v1\.35, v1\.36/);
    });
  });

  describe("keys the schema does not know", () => {
    it("reports a management-only setting on a downstream cluster once, as a key it does not use", () => {
      const raw = estateWith("rancher.downstreamClusters[0].serverJoin", 5);
      setAt(raw, "rancher.downstreamClusters[0].installCommand", "");
      assert.deepEqual(
        problemsOf(raw).map((p) => [
          p.key,
          /is not a setting this program uses here/.test(p.message),
        ]),
        [
          [stackKey("rancher.downstreamClusters[0].serverJoin"), true],
          [stackKey("rancher.downstreamClusters[0].installCommand"), true],
        ],
      );
    });

    const cases: { path: (string | number)[]; value: unknown; key: string; closest: string }[] = [
      {
        path: ["dns", "nodelocal"],
        value: { enabled: true },
        key: "dns.nodelocal",
        closest: "dns.nodeLocal",
      },
      {
        path: ["rke2", "kubeproxymode"],
        value: "ipvs",
        key: "rke2.kubeproxymode",
        closest: "rke2.kubeProxyMode",
      },
      { path: ["dnss"], value: {}, key: "dnss", closest: "dns" },
      {
        path: ["nodes", 0, "ssh", "hostkey"],
        value: "x",
        key: "nodes[0].ssh.hostkey",
        closest: "nodes[0].ssh.hostKey",
      },
      {
        path: ["rancher", "downstreamClusters", 0, "etcdSnapshot", "retension"],
        value: 3,
        key: "rancher.downstreamClusters[0].etcdSnapshot.retension",
        closest: "rancher.downstreamClusters[0].etcdSnapshot.retention",
      },
      {
        path: ["deploy", "clusterdns"],
        value: false,
        key: "deploy.clusterdns",
        closest: "deploy.clusterDns",
      },
    ];
    for (const c of cases) {
      it(`rejects ${c.key}, naming ${c.closest}`, () => {
        const problem = problemAt(problemsOf(setAt(estateRawConfig(), c.path, c.value)), c.key);
        assert.match(problem.message, /is not a setting this program uses here/);
        assert.ok(
          problem.message.includes(`did you mean ${stackKey(c.closest)}?`),
          problem.message,
        );
      });
    }

    it("rejects management-only settings on a downstream cluster, where they would do nothing", () => {
      const settings: Record<string, string> = {
        installCommand: "true",
        serverJoin: "sequential",
        dnsDelivery: "helmChartConfig",
        registrationAddress: "192.168.122.31",
      };
      for (const [key, value] of Object.entries(settings)) {
        const path = `rancher.downstreamClusters[0].${key}`;
        const problem = problemAt(problemsOf(estateWith(path, value)), path);
        assert.match(problem.message, /is not a setting this program uses here/);
      }
    });

    it("rejects a secret under an unknown name", () => {
      const raw = estateRawConfig();
      raw.secretKeys.add("rke2token");
      const problem = problemAt(problemsOf(raw), "rke2token");
      assert.ok(problem.message.includes(stackKey("rke2Token")), problem.message);
    });

    it("knows rke2.registrationAddress", () => {
      const problems = problemsOf(estateWith("rke2.registrationAddress", "192.168.122.100"));
      assert.ok(!problems.some((p) => p.key === stackKey("rke2.registrationAddress")));
    });

    it("rejects a key in a namespace one edit from rke2-remediation, read from the stack file", () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-validate-"));
      const file = path.join(dir, "Pulumi.lab.yaml");
      const doc = YAML.parse(fs.readFileSync(stackFilePath("lab"), "utf8")) as {
        config: Record<string, unknown>;
      };
      doc.config["rke2-remediaton:rke2"] = { kubeProxyMode: "iptables" };
      doc.config["kubernetes:context"] = "lab";
      fs.writeFileSync(file, YAML.stringify(doc));
      const problems = problemsOf(rawConfigFromStackFile(file));
      fs.rmSync(dir, { recursive: true });
      assert.deepEqual(
        problems.map((p) => p.key),
        ["rke2-remediaton:rke2"],
      );
      assert.match(problems[0].message, /one edit from "rke2-remediation"/);
      assert.ok(
        problems[0].message.includes("Did you mean rke2-remediation:rke2?"),
        problems[0].message,
      );
    });
  });

  describe("etcd snapshot schedule", () => {
    const key = "rke2.etcdSnapshot.scheduleCron";
    const bad: { cron: string; field: RegExp }[] = [
      { cron: "61 * * * *", field: /minute field "61": 61 is outside 0-59/ },
      { cron: "0 24 * * *", field: /hour field "24": 24 is outside 0-23/ },
      { cron: "0 0 0 * *", field: /day-of-month field "0": 0 is outside 1-31/ },
      { cron: "0 */6 * 13 *", field: /month field "13": 13 is outside 1-12/ },
      { cron: "0 0 * * 7", field: /day-of-week field "7": 7 is outside 0-6/ },
      {
        cron: "0 5-2 * * *",
        field: /hour field "5-2": the range 5-2 starts after it ends/,
      },
      { cron: "*/0 * * * *", field: /minute field "\*\/0": the step "0" is not a positive/ },
    ];
    for (const { cron, field } of bad) {
      it(`rejects "${cron}", naming the field`, () => {
        const problem = problemAt(problemsOf(estateWith(key, cron)), key);
        assert.match(problem.message, field);
      });
    }

    it("accepts schedules within every field's range", () => {
      for (const cron of ["0 */6 * * *", "30 1-5/2 1,15 * 0-6", "59 23 31 12 6", "5/15 * * * *"]) {
        assert.deepEqual(problemsOf(estateWith(key, cron)), [], cron);
      }
    });
  });

  describe("the Rancher hostname's static answer", () => {
    const rancherHost = ["dns", "staticHosts", "ai-ear.cn"];
    /** uat1 giving Rancher's values itself (no management servers, no managementStack). */
    const uat1With = (path: string[], value: unknown) =>
      setAt(uat1StandaloneRawConfig(), path, value);

    it("rejects a static answer that is not exactly the management servers", () => {
      const raw = setAt(estateRawConfig(), rancherHost, ["192.168.122.20", "192.168.122.21"]);
      const problem = problemAt(problemsOf(raw), 'dns.staticHosts["ai-ear.cn"]');
      assert.match(problem.message, /lists 192\.168\.122\.20, 192\.168\.122\.21/);
      assert.match(
        problem.message,
        /management servers 192\.168\.122\.20, 192\.168\.122\.21, 192\.168\.122\.22/,
      );
      assert.ok(problem.message.includes(stackKey("nodes")), problem.message);
    });

    it("accepts the servers in another order", () => {
      const raw = setAt(estateRawConfig(), rancherHost, [
        "192.168.122.22",
        "192.168.122.20",
        "192.168.122.21",
      ]);
      assert.deepEqual(problemsOf(raw), []);
    });

    it("derives the answer from the management servers when the stack gives none", () => {
      const model = estateModel(setAt(estateRawConfig(), rancherHost, undefined));
      assert.deepEqual([...model.dns.staticHosts["ai-ear.cn"]].sort(), [
        "192.168.122.20",
        "192.168.122.21",
        "192.168.122.22",
      ]);
    });

    it("derives it from the libvirt records in a stack without management servers", () => {
      const raw = uat1With(rancherHost, undefined);
      const model = estateModel(raw);
      assert.deepEqual(model.dns.staticHosts["ai-ear.cn"], [
        "192.168.122.20",
        "192.168.122.21",
        "192.168.122.22",
      ]);
    });

    it("compares with the libvirt records in a stack without management servers", () => {
      const raw = uat1With(rancherHost, ["192.168.122.20"]);
      const problem = problemAt(problemsOf(raw), 'dns.staticHosts["ai-ear.cn"]');
      assert.ok(
        problem.message.includes(stackKey('libvirt.dnsRecords["ai-ear.cn"]')),
        problem.message,
      );
      assert.match(problem.message, /Make both list the same addresses/);
    });
  });

  describe("Rancher downstream clusters", () => {
    it("validates a stack of downstream clusters only, without the management `rke2` key", () => {
      assert.deepEqual(problemsOf(uat1StandaloneRawConfig()), []);
      assert.deepEqual(
        problemsOf(uat1RawConfig(), {
          requireSecrets: false,
          managementOutputs: labManagementOutputs(),
        }),
        [],
      );
    });

    it("requires an etcd, a controlplane and a worker node, as Rancher's planner does", () => {
      const problem = problemAt(
        problemsOf(estateWith("nodes[3].roles", ["etcd"])),
        "rancher.downstreamClusters[0]",
      );
      assert.match(problem.message, /no node with role controlplane; Rancher delivers no plan/);
      const noWorker = estateWith("nodes[4].roles", ["controlplane"]);
      assert.match(
        problemAt(problemsOf(noWorker), "rancher.downstreamClusters[0]").message,
        /cluster "uat1" has no node with role worker/,
      );
    });

    it("accepts etcd and controlplane on different nodes when a worker is among them", () => {
      const split = estateWith("nodes[3].roles", ["etcd", "worker"]);
      setAt(split, "nodes[4].roles", ["controlplane"]);
      assert.deepEqual(problemsOf(split), []);
    });

    it("refuses a cluster whose only worker is a second etcd node, naming the stack key", () => {
      const raw = estateWith("nodes[4].roles", ["etcd", "worker"]);
      assert.match(
        problemAt(problemsOf(raw), "rancher.downstreamClusters[0]").message,
        /no worker node without etcd to register beside the init node/,
      );
    });

    it("keeps rancher.caCertificate byte for byte, its trailing newline included", () => {
      const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
      assert.equal(
        estateModel(estateWith("rancher.caCertificate", pem)).rancher!.caCertificate,
        pem,
      );
      const bare = pem.trimEnd();
      assert.equal(
        estateModel(estateWith("rancher.caCertificate", bare)).rancher!.caCertificate,
        bare,
      );
    });

    it("requires Rancher's CA unless the cluster opts in to insecure registration", () => {
      const problem = problemAt(
        problemsOf(estateWith("rancher.caCertificate", undefined)),
        "rancher.caCertificate",
      );
      assert.match(problem.message, /--ca-checksum/);
      assert.match(problem.message, /curl -fsk https:\/\/<rancher>\/cacerts/);
      const optedIn = estateWith("rancher.caCertificate", undefined);
      setAt(optedIn, "rancher.downstreamClusters[0].insecureRegistration", true);
      assert.deepEqual(problemsOf(optedIn), []);
    });
  });

  describe("secrets", () => {
    it("rejects a secret stored in plain text without echoing it", () => {
      const raw = estateWith("rke2Token", "K10-plain-text-token");
      assert.equal(raw.secretKeys.size, 0);
      const problem = problemAt(problemsOf(raw), "rke2Token");
      assert.match(problem.message, /is stored in plain text/);
      assert.match(problem.message, /pulumi config set --secret rke2Token/);
      assert.ok(!problem.message.includes("K10-plain-text-token"), problem.message);
    });

    it("reports a missing secret when the deployment requires secrets", () => {
      const raw = estateRawConfigWithSecrets();
      raw.secretKeys.delete("rke2Token");
      const problems = problemsOf(raw, { requireSecrets: true });
      assert.deepEqual(
        problems.map((p) => p.key),
        [stackKey("rke2Token")],
      );
      assert.match(problems[0].message, /is not set; set it with `pulumi config set --secret/);
    });

    it("does not require secrets for offline render and verify", () => {
      assert.deepEqual(problemsOf(estateRawConfig(), { requireSecrets: false }), []);
    });
  });

  describe("reporting", () => {
    it("reports each problem once, whatever declared setting holds a value of the wrong kind", function () {
      // Validates the stack once per declared setting and kind (some hundred runs).
      this.timeout(30000);
      // Every setting of the declaration but the management stack's name (its outputs are
      // another test's), at the first entry of each list.
      const paths = declaredSettingPaths(STACK_SETTINGS_KEYS).filter(
        (p) => p !== "managementStack",
      );
      assert.ok(paths.length > 60, `only ${paths.length} settings found`);
      const twice: string[] = [];
      for (const path of paths) {
        for (const value of [5, [5], {}]) {
          const seen = new Set<string>();
          for (const p of problemsOf(estateWith(path, value))) {
            const line = `${p.key}: ${p.message}`;
            if (seen.has(line)) twice.push(`${path} = ${JSON.stringify(value)} -> ${line}`);
            seen.add(line);
          }
        }
      }
      assert.deepEqual(twice, []);
    });

    it("reports every problem, not only the first", () => {
      const raw = estateRawConfig();
      setAt(raw, "rke2.version", "1.35.6");
      setAt(raw, "rke2.clusterCidr", "10.12.0.0/33");
      setAt(raw, "dns.upstreamResolvers", ["10.13.0.10"]);
      const keys = new Set(problemsOf(raw).map((p) => p.key));
      for (const path of ["rke2.version", "rke2.clusterCidr", "dns.upstreamResolvers[0]"]) {
        assert.ok(keys.has(stackKey(path)), `missing ${path} in ${[...keys].join(", ")}`);
      }
      assert.equal(keys.size, 3);
    });

    it("throws one error naming every problem from loadEnvironmentModel", () => {
      const raw = estateWith("rke2.version", "1.35.6");
      setAt(raw, "nodes[1].ip", "192.168.122.300");
      assert.throws(
        () => loadEnvironmentModel("lab", raw, { requireSecrets: false }),
        (err: Error) =>
          err.name === "ConfigValidationError" &&
          err.message.includes(stackKey("rke2.version")) &&
          err.message.includes(stackKey("nodes[1].ip")),
      );
    });

    it("leaves the shared fixture untouched when a case changes a copy", () => {
      estateWith("nodes[1].ip", "192.168.122.300");
      assert.equal(getAt(estateRawConfig(), "nodes[1].ip"), "192.168.122.21");
    });
  });
});

/** A private key's body, as a user might paste it; no test message may contain it. */
const KEY_BODY = "MC4CAQAwBQYDK2VwBCIEIPLACEHOLDERprivateKEYbodyNOTaREALkey0000";
const PRIVATE_KEY = `-----BEGIN PRIVATE KEY-----\n${KEY_BODY}\n-----END PRIVATE KEY-----\n`;

/** The problems at `path`, asserting there is exactly one and returning its message. */
function onlyProblemAt(raw: ReturnType<typeof estateWith>, path: string): string {
  const problems = problemsOf(raw);
  const found = problems.filter((p) => p.key === stackKey(path));
  assert.equal(
    found.length,
    1,
    `expected one problem at ${path}, got:\n${problems.map((p) => `  ${p.key}: ${p.message}`).join("\n")}`,
  );
  return found[0].message;
}

describe("estate mistakes that are well-formed values", () => {
  describe("addresses no node can have", () => {
    it("refuses the libvirt subnet's network address as a node's ip", () => {
      const message = onlyProblemAt(estateWith("nodes[3].ip", "192.168.122.0"), "nodes[3].ip");
      assert.match(message, /192\.168\.122\.0 is the network address of libvirt\.subnet/);
      assert.match(message, /set the address node sza122031\.local has/);
    });

    it("refuses the libvirt subnet's broadcast address as a node's ip", () => {
      const message = onlyProblemAt(estateWith("nodes[4].ip", "192.168.122.255"), "nodes[4].ip");
      assert.match(message, /192\.168\.122\.255 is the broadcast address of libvirt\.subnet/);
    });

    it("refuses the network's default gateway, its first address, as a node's ip", () => {
      // The KVM host is reached elsewhere, so only the gateway rule can refuse .1.
      const raw = estateWith("libvirt.ssh.host", "10.0.0.1");
      setAt(raw, "nodes[4].ip", "192.168.122.1");
      const message = onlyProblemAt(raw, "nodes[4].ip");
      assert.match(message, /192\.168\.122\.1 is the libvirt network's gateway/);
      assert.ok(message.includes("libvirt.gateway"), message);
    });

    it("refuses the gateway the stack sets in libvirt.gateway as a node's ip", () => {
      const raw = estateWith("libvirt.gateway", "192.168.122.254");
      setAt(raw, "nodes[4].ip", "192.168.122.254");
      assert.match(onlyProblemAt(raw, "nodes[4].ip"), /is the libvirt network's gateway/);
    });

    it("lets a node have the first address when libvirt.gateway names another", () => {
      const raw = estateWith("libvirt.gateway", "192.168.122.254");
      setAt(raw, "libvirt.ssh.host", "10.0.0.1");
      setAt(raw, "nodes[4].ip", "192.168.122.1");
      assert.deepEqual(problemsOf(raw), []);
    });

    it("refuses the KVM host's own SSH address as a node's ip", () => {
      const raw = estateWith("libvirt.gateway", "192.168.122.254");
      setAt(raw, "libvirt.ssh.host", "192.168.122.2");
      setAt(raw, "nodes[4].ip", "192.168.122.2");
      assert.match(
        onlyProblemAt(raw, "nodes[4].ip"),
        /192\.168\.122\.2 is the KVM host's own address \(libvirt\.ssh\.host\)/,
      );
    });

    it("refuses a libvirt.gateway outside the subnet", () => {
      const message = onlyProblemAt(estateWith("libvirt.gateway", "10.0.0.1"), "libvirt.gateway");
      assert.match(
        message,
        /10\.0\.0\.1 is not a host address of .*libvirt\.subnet 192\.168\.122\.0\/24/,
      );
      assert.match(message, /virsh net-dumpxml/);
    });

    it("refuses a loopback node address", () => {
      assert.match(
        onlyProblemAt(estateWith("nodes[4].ip", "127.0.0.5"), "nodes[4].ip"),
        /127\.0\.0\.5 is in the loopback block/,
      );
    });

    it("refuses a node address inside a cluster's service CIDR", () => {
      const message = onlyProblemAt(estateWith("nodes[4].ip", "10.43.0.5"), "nodes[4].ip");
      assert.match(
        message,
        /lies inside .*rancher\.downstreamClusters\[0\]\.serviceCidr 10\.43\.0\.0\/16/,
      );
    });
  });

  describe("service CIDR size", () => {
    it("refuses a service CIDR too small to hold kube-dns at its 10th address", () => {
      const message = onlyProblemAt(
        estateWith("rke2.serviceCidr", "10.13.0.0/29"),
        "rke2.serviceCidr",
      );
      assert.match(message, /10\.13\.0\.0\/29 holds 8 addresses/);
      assert.match(message, /cluster-dns would be 10\.13\.0\.10, outside the range/);
      assert.match(message, /Use a \/28 or larger/);
    });

    it("accepts a /28, which holds .10 among its allocatable addresses", () => {
      assert.deepEqual(problemsOf(estateWith("rke2.serviceCidr", "10.13.0.0/28")), []);
    });

    it("refuses a service CIDR larger than kube-apiserver accepts", () => {
      const message = onlyProblemAt(
        estateWith("rancher.downstreamClusters[0].serviceCidr", "172.32.0.0/11"),
        "rancher.downstreamClusters[0].serviceCidr",
      );
      assert.match(message, /at most a \/12/);
    });

    it("refuses a pod network in the link-local block", () => {
      const problems = problemsOf(estateWith("rke2.clusterCidr", "169.254.0.0/16"));
      const message = problems.find((p) => p.key === stackKey("rke2.clusterCidr"))?.message ?? "";
      assert.match(message, /overlaps 169\.254\.0\.0\/16, the link-local block/);
    });
  });

  describe("NodePort ranges", () => {
    it("refuses a range that covers RKE2's own ports, naming each", () => {
      const message = onlyProblemAt(
        estateWith("rke2.nodePortRange", "2000-12000"),
        "rke2.nodePortRange",
      );
      for (const port of ["6443", "9345", "10250", "2379", "2380", "2381"]) {
        assert.ok(message.includes(`${port} (`), `${port} missing from: ${message}`);
      }
      assert.match(message, /kube-proxy forwards every NodePort on every node/);
    });

    it("refuses a range over the cluster's CNI ports, read for that cluster's CNI", () => {
      const message = onlyProblemAt(
        estateWith("rancher.downstreamClusters[0].nodePortRange", "9000-9100"),
        "rancher.downstreamClusters[0].nodePortRange",
      );
      assert.match(message, /9098 \(Calico Typha health checks\), 9099 \(Calico health checks\)/);
    });

    it("refuses a range over the nodes' SSH port", () => {
      const message = onlyProblemAt(
        estateWith("rke2.nodePortRange", "20-100"),
        "rke2.nodePortRange",
      );
      assert.match(message, /22 \(SSH to the nodes\)/);
    });

    it("refuses a range starting at port 0", () => {
      assert.match(
        onlyProblemAt(estateWith("rke2.nodePortRange", "0-100"), "rke2.nodePortRange"),
        /starts at port 0/,
      );
    });
  });

  describe("DNS server addresses", () => {
    for (const [ip, why] of [
      ["127.0.0.53", /loopback block/],
      ["0.0.0.0", /"this network" block/],
      ["8.8.8.8", /is a public address/],
    ] as const) {
      it(`refuses ${ip} as the NodeLocalDNS address`, () => {
        const message = onlyProblemAt(estateWith("dns.nodeLocal.ip", ip), "dns.nodeLocal.ip");
        assert.match(message, why);
        assert.match(message, /link-local address such as 169\.254\.20\.10/);
      });
    }

    it("accepts another link-local NodeLocalDNS address", () => {
      assert.deepEqual(problemsOf(estateWith("dns.nodeLocal.ip", "169.254.25.10")), []);
    });

    for (const ip of ["0.0.0.0", "255.255.255.255", "224.0.0.251", "169.254.169.254"]) {
      it(`refuses ${ip} as an upstream resolver`, () => {
        const message = onlyProblemAt(
          estateWith("dns.upstreamResolvers", [ip, "192.168.122.1"]),
          "dns.upstreamResolvers[0]",
        );
        assert.match(message, /where no resolver can answer/);
      });
    }

    it("accepts a public upstream resolver", () => {
      assert.deepEqual(
        problemsOf(estateWith("dns.upstreamResolvers", ["192.168.122.1", "9.9.9.9"])),
        [],
      );
    });

    it("refuses the same upstream resolver twice", () => {
      const message = onlyProblemAt(
        estateWith("dns.upstreamResolvers", ["192.168.122.1", "192.168.122.1"]),
        "dns.upstreamResolvers[1]",
      );
      assert.match(message, /is also dns\.upstreamResolvers\[0\]/);
    });
  });

  describe("host entries", () => {
    it("refuses a dns.staticHosts entry with no address", () => {
      const raw = estateWith(["dns", "staticHosts", "registry.lab"], []);
      assert.match(onlyProblemAt(raw, 'dns.staticHosts["registry.lab"]'), /lists no address/);
    });

    it("refuses a libvirt.dnsRecords entry with no address", () => {
      const raw = estateWith(["libvirt", "dnsRecords", "registry.lab"], []);
      assert.match(onlyProblemAt(raw, 'libvirt.dnsRecords["registry.lab"]'), /lists no address/);
    });
  });

  describe("ports and registry", () => {
    it("refuses a registry port above 65535", () => {
      const message = onlyProblemAt(
        estateWith("rke2.privateRegistry", "192.168.122.156:70000"),
        "rke2.privateRegistry",
      );
      assert.match(message, /port 70000 is outside 1-65535/);
    });

    it("refuses registry port 0", () => {
      assert.match(
        onlyProblemAt(
          estateWith("rke2.privateRegistry", "192.168.122.156:0"),
          "rke2.privateRegistry",
        ),
        /port 0 is outside 1-65535/,
      );
    });

    it("refuses a registry host that is no DNS name", () => {
      assert.match(
        onlyProblemAt(
          estateWith("rke2.privateRegistry", "registry..lab:5000"),
          "rke2.privateRegistry",
        ),
        /"registry\.\.lab" is neither an IPv4 address nor a DNS name/,
      );
    });

    it("refuses registry credentials without echoing them", () => {
      const message = onlyProblemAt(
        estateWith("rke2.privateRegistry", "admin:hunter22@192.168.122.156:30000"),
        "rke2.privateRegistry",
      );
      assert.match(message, /registries\.yaml/);
      assert.ok(!message.includes("hunter22"), message);
    });

    it("refuses a rancher.url port above 65535", () => {
      assert.match(
        onlyProblemAt(estateWith("rancher.url", "https://ai-ear.cn:99999"), "rancher.url"),
        /port 99999 is outside 1-65535/,
      );
    });
  });

  describe("SSH endpoints", () => {
    it("refuses two nodes at the same SSH endpoint", () => {
      const message = onlyProblemAt(
        estateWith("nodes[4].ssh.host", "192.168.122.31"),
        "nodes[4].ssh.host",
      );
      assert.match(
        message,
        /node sza122030\.local is reached at 192\.168\.122\.31 port 22, as nodes\[3\] \(sza122031\.local\) is/,
      );
    });

    it("accepts two nodes behind one address on different ports", () => {
      const raw = estateWith("nodes[4].ssh.host", "192.168.122.31");
      setAt(raw, "nodes[4].ssh.port", 2222);
      assert.deepEqual(problemsOf(raw), []);
    });

    it("refuses a node reached at the KVM host's SSH endpoint", () => {
      const message = onlyProblemAt(
        estateWith("nodes[4].ssh.host", "192.168.122.1"),
        "nodes[4].ssh.host",
      );
      assert.match(message, /as libvirt\.ssh \(the KVM host\) is/);
    });

    it("refuses an SSH host that is neither an address nor a DNS name", () => {
      assert.match(
        onlyProblemAt(estateWith("nodes[4].ssh.host", "-oProxyCommand=x"), "nodes[4].ssh.host"),
        /neither an IPv4 address nor a DNS name/,
      );
    });
  });

  describe("registration address", () => {
    it("refuses a downstream node's address as rke2.registrationAddress", () => {
      const raw = estateWith("rke2.registrationAddress", "192.168.122.30");
      setAt(raw, "rke2.tlsSan", ["192.168.122.30"]);
      const message = onlyProblemAt(raw, "rke2.registrationAddress");
      assert.match(
        message,
        /node sza122030\.local of downstream cluster uat1, not of a management server/,
      );
    });

    it("refuses the network's gateway as rke2.registrationAddress", () => {
      const raw = estateWith("rke2.registrationAddress", "192.168.122.1");
      setAt(raw, "rke2.tlsSan", ["192.168.122.1"]);
      assert.match(onlyProblemAt(raw, "rke2.registrationAddress"), /gateway/);
    });
  });

  describe("Rancher URL", () => {
    it("refuses capitals in rancher.url's host, showing the lowercase form", () => {
      const message = onlyProblemAt(estateWith("rancher.url", "https://AI-EAR.cn"), "rancher.url");
      assert.match(message, /the host "AI-EAR\.cn" has capitals/);
      assert.ok(message.includes("https://ai-ear.cn"), message);
    });

    it("refuses credentials in rancher.url without echoing them", () => {
      const message = onlyProblemAt(
        estateWith("rancher.url", "https://admin:hunter22@ai-ear.cn"),
        "rancher.url",
      );
      assert.ok(!message.includes("hunter22"), message);
      assert.match(message, /a password in a URL/);
    });
  });

  describe("secrets in plain keys", () => {
    it("refuses a private key pasted after the CA in rancher.caCertificate, without echoing it", () => {
      const ca = getAt(estateRawConfig(), "rancher.caCertificate") as string;
      const message = onlyProblemAt(
        estateWith("rancher.caCertificate", ca + PRIVATE_KEY),
        "rancher.caCertificate",
      );
      assert.match(message, /holds a private key, in a plain key/);
      assert.match(message, /pulumi config set --secret/);
      assert.ok(!message.includes(KEY_BODY), message);
    });

    it("refuses a private key alone in rancher.caCertificate with that one message", () => {
      const message = onlyProblemAt(
        estateWith("rancher.caCertificate", PRIVATE_KEY),
        "rancher.caCertificate",
      );
      assert.match(message, /holds a private key/);
    });

    it("refuses a private key pasted as a node's host key", () => {
      const raw = estateWith(
        "nodes[2].ssh.hostKey",
        PRIVATE_KEY.replace("PRIVATE", "OPENSSH PRIVATE"),
      );
      const message = onlyProblemAt(raw, "nodes[2].ssh.hostKey");
      assert.match(message, /holds a private key/);
      assert.ok(!message.includes(KEY_BODY), message);
    });

    it("refuses an RKE2 join token in rke2.installCommand", () => {
      const token = `K10${"ab".repeat(32)}::server:s3cr3tpassw0rd`;
      const message = onlyProblemAt(
        estateWith(
          "rke2.installCommand",
          `curl -sfL https://get.rke2.io | INSTALL_TOKEN=${token} sh -`,
        ),
        "rke2.installCommand",
      );
      assert.match(message, /holds an RKE2 join token/);
      assert.ok(!message.includes("s3cr3tpassw0rd"), message);
    });

    it("refuses a Rancher API token in any plain key", () => {
      const message = onlyProblemAt(
        estateWith(
          "rancher.downstreamClusters[0].privateRegistry",
          "token-ab1cd:x".padEnd(60, "q"),
        ),
        "rancher.downstreamClusters[0].privateRegistry",
      );
      assert.match(message, /holds a Rancher API token/);
    });

    it("refuses a kubeconfig's credentials under a host entry's name", () => {
      const raw = estateWith(
        ["dns", "staticHosts", "ai-ear.cn"],
        ["client-key-data: LS0tLS1CRUdJTi"],
      );
      const problems = problemsOf(raw);
      assert.ok(
        problems.some(
          (p) =>
            p.key === stackKey('dns.staticHosts["ai-ear.cn"][0]') &&
            /a kubeconfig's credentials/.test(p.message) &&
            !p.message.includes("LS0tLS1CRUdJTi"),
        ),
        problems.map((p) => `${p.key}: ${p.message}`).join("\n"),
      );
    });
  });

  describe("node names", () => {
    it("refuses a node name with capitals, which no Kubernetes node can have", () => {
      const message = onlyProblemAt(
        estateWith("nodes[1].name", "SZA122020.local"),
        "nodes[1].name",
      );
      assert.match(message, /"SZA122020\.local" has capitals; .* Write "sza122020\.local"\./);
    });

    it("refuses a node name Kubernetes does not accept (an underscore)", () => {
      assert.match(
        onlyProblemAt(estateWith("nodes[1].name", "sza_122021.local"), "nodes[1].name"),
        /is not a valid DNS name/,
      );
    });
  });
});
