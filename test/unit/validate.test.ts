import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/load";
import * as assert from "assert/strict";
import { MANAGEMENT_CLUSTER, serversOf } from "../../infra/config/model";
import { ConfigProblem } from "../../infra/config/problems";
import { loadEnvironmentModel, validateEnvironment } from "../../infra/config/validate";
import {
  getAt,
  labModel,
  labRawConfig,
  labRawConfigWithSecrets,
  labWith,
  problemsOf,
  setAt,
  stackKey,
} from "./fixtures";

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
      const { model, problems } = validateEnvironment("lab", labRawConfig(), {
        requireSecrets: false,
      });
      assert.deepEqual(problems, []);
      assert.ok(model);
    });

    it("describes three management servers and the downstream cluster uat1", () => {
      const model = labModel();
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
      const model = labModel();
      assert.equal(model.management.clusterDnsIp, "10.13.0.10");
      assert.equal(model.rancher?.downstreamClusters[0].clusterDnsIp, "10.43.0.10");
    });

    it("validates with every secret stored as a Pulumi secret when secrets are required", () => {
      assert.deepEqual(problemsOf(labRawConfigWithSecrets(), { requireSecrets: true }), []);
    });
  });

  describe("addresses and networks", () => {
    it("rejects a malformed node IP at the node's ip key", () => {
      const problem = problemAt(
        problemsOf(labWith("nodes[1].ip", "192.168.122.300")),
        "nodes[1].ip",
      );
      assert.match(problem.message, /"192\.168\.122\.300" is not an IPv4 address/);
      assert.match(problem.message, /write four dotted numbers/);
    });

    it("rejects a CIDR whose prefix is longer than 32", () => {
      const problem = problemAt(
        problemsOf(labWith("rke2.clusterCidr", "10.12.0.0/33")),
        "rke2.clusterCidr",
      );
      assert.match(problem.message, /"10\.12\.0\.0\/33" is not a network in CIDR form/);
      assert.match(problem.message, /write the network address and prefix/);
    });

    it("rejects a CIDR with host bits set", () => {
      const problem = problemAt(
        problemsOf(labWith("rke2.clusterCidr", "10.12.0.1/16")),
        "rke2.clusterCidr",
      );
      assert.match(problem.message, /"10\.12\.0\.1\/16" is not a network in CIDR form/);
      assert.match(problem.message, /write the network address/);
    });

    it("rejects a service CIDR that overlaps the cluster CIDR", () => {
      const problem = problemAt(
        problemsOf(labWith("rke2.serviceCidr", "10.12.128.0/17")),
        "rke2.clusterCidr",
      );
      assert.match(problem.message, /10\.12\.0\.0\/16 overlaps 10\.12\.128\.0\/17/);
      assert.ok(problem.message.includes(stackKey("rke2.serviceCidr")), problem.message);
      assert.match(problem.message, /must be disjoint/);
    });

    it("rejects a cluster CIDR that overlaps the libvirt node subnet", () => {
      const problem = problemAt(
        problemsOf(labWith("rke2.clusterCidr", "192.168.0.0/16")),
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
        problemsOf(labWith("libvirt.network", "--help")),
        "libvirt.network",
      );
      assert.match(problem.message, /"--help" is not a libvirt network name/);
      assert.match(problem.message, /virsh net-list --all/);
    });

    it("accepts a network name with dots, dashes and underscores", () => {
      assert.deepEqual(problemsOf(labWith("libvirt.network", "lab_net-2.a")), []);
    });
  });

  describe("nodes", () => {
    it("rejects a node name used twice, naming the first node", () => {
      const problem = problemAt(
        problemsOf(labWith("nodes[1].name", "sza122020.local")),
        "nodes[1].name",
      );
      assert.match(problem.message, /"sza122020\.local" is also nodes\[0\]/);
      assert.match(problem.message, /must be unique/);
    });

    it("rejects a node IP used twice, naming the first node", () => {
      const problem = problemAt(
        problemsOf(labWith("nodes[1].ip", "192.168.122.20")),
        "nodes[1].ip",
      );
      assert.match(problem.message, /192\.168\.122\.20 is also nodes\[0\]\.ip/);
      assert.match(problem.message, /must be unique/);
    });

    it("rejects a node without a pinned SSH host key and says where to read it", () => {
      const problem = problemAt(
        problemsOf(labWith("nodes[0].ssh.hostKey", undefined)),
        "nodes[0].ssh.hostKey",
      );
      assert.match(problem.message, /sza122020\.local has no pinned host key/);
      assert.match(problem.message, /\/etc\/ssh\/ssh_host_ed25519_key\.pub/);
    });

    it("requires at least one server in the management cluster", () => {
      const raw = labRawConfig();
      for (const i of [0, 1, 2]) setAt(raw, `nodes[${i}].role`, "agent");
      const problem = problemAt(problemsOf(raw), "nodes");
      assert.match(problem.message, /no node with role "server" in the management cluster/);
    });

    it("rejects an unknown role and lists the known ones", () => {
      const problem = problemAt(problemsOf(labWith("nodes[0].role", "master")), "nodes[0].role");
      assert.match(problem.message, /unknown role\(s\) "master"/);
      assert.match(problem.message, /use one of server, agent, etcd, controlplane, worker/);
    });
  });

  describe("RKE2 settings", () => {
    it("requires every server IP in tls-san, naming the missing server", () => {
      const problem = problemAt(
        problemsOf(labWith("rke2.tlsSan", ["192.168.122.20", "192.168.122.22"])),
        "rke2.tlsSan",
      );
      assert.match(problem.message, /server sza122021\.local \(192\.168\.122\.21\)/);
      assert.match(problem.message, /add it/);
    });

    it("rejects a version that is not an RKE2 release and shows the right form", () => {
      const problem = problemAt(problemsOf(labWith("rke2.version", "1.35.6")), "rke2.version");
      assert.match(problem.message, /"1\.35\.6" is not an RKE2 release/);
      assert.match(problem.message, /e\.g\. v1\.35\.6\+rke2r1/);
    });
  });

  describe("cluster DNS", () => {
    it("rejects an invalid hostname among the static hosts", () => {
      const problem = problemAt(
        problemsOf(labWith("dns.staticHosts", { "ai_ear.cn": ["192.168.122.20"] })),
        'dns.staticHosts["ai_ear.cn"]',
      );
      assert.match(problem.message, /"ai_ear\.cn" is not a valid DNS name; fix the hostname/);
    });

    it("rejects a NodeLocalDNS address inside the service CIDR", () => {
      const problem = problemAt(
        problemsOf(labWith("dns.nodeLocal.ip", "10.13.0.53")),
        "dns.nodeLocal.ip",
      );
      assert.match(problem.message, /10\.13\.0\.53 lies inside 10\.13\.0\.0\/16/);
      assert.match(problem.message, /pick a link-local address such as 169\.254\.20\.10/);
    });

    it("rejects forwarding to the cluster's own DNS address as a loop", () => {
      const problem = problemAt(
        problemsOf(labWith("dns.upstreamResolvers", ["10.13.0.10"])),
        "dns.upstreamResolvers[0]",
      );
      assert.match(problem.message, /10\.13\.0\.10 is the cluster DNS of management/);
      assert.match(problem.message, /loop/);
      assert.match(problem.message, /Use the nodes' real resolvers/);
    });

    it("rejects forwarding to the NodeLocalDNS address as a loop", () => {
      const problem = problemAt(
        problemsOf(labWith("dns.upstreamResolvers", ["169.254.20.10"])),
        "dns.upstreamResolvers[0]",
      );
      assert.match(problem.message, /169\.254\.20\.10 is the NodeLocalDNS address/);
      assert.match(problem.message, /Use the nodes' real resolvers/);
    });
  });

  describe("Rancher downstream clusters", () => {
    it("validates a stack of downstream clusters only, without the management `rke2` key", () => {
      assert.deepEqual(problemsOf(rawConfigFromStackFile(stackFilePath("uat1"))), []);
    });

    it("requires a node with both etcd and controlplane to register first", () => {
      const problem = problemAt(
        problemsOf(labWith("nodes[3].roles", ["etcd"])),
        "rancher.downstreamClusters[0]",
      );
      assert.match(problem.message, /no node with role controlplane/);
      const split = labWith("nodes[3].roles", ["etcd", "worker"]);
      setAt(split, "nodes[4].roles", ["controlplane"]);
      assert.match(
        problemAt(problemsOf(split), "rancher.downstreamClusters[0]").message,
        /no node with both roles etcd and controlplane/,
      );
    });

    it("requires Rancher's CA unless the cluster opts in to insecure registration", () => {
      const problem = problemAt(
        problemsOf(labWith("rancher.caCertificate", undefined)),
        "rancher.caCertificate",
      );
      assert.match(problem.message, /--ca-checksum/);
      assert.match(problem.message, /curl -fsk https:\/\/<rancher>\/cacerts/);
      const optedIn = labWith("rancher.caCertificate", undefined);
      setAt(optedIn, "rancher.downstreamClusters[0].insecureRegistration", true);
      assert.deepEqual(problemsOf(optedIn), []);
    });
  });

  describe("secrets", () => {
    it("rejects a secret stored in plain text without echoing it", () => {
      const raw = labWith("rke2Token", "K10-plain-text-token");
      assert.equal(raw.secretKeys.size, 0);
      const problem = problemAt(problemsOf(raw), "rke2Token");
      assert.match(problem.message, /is stored in plain text/);
      assert.match(problem.message, /pulumi config set --secret rke2Token/);
      assert.ok(!problem.message.includes("K10-plain-text-token"), problem.message);
    });

    it("reports a missing secret when the deployment requires secrets", () => {
      const raw = labRawConfigWithSecrets();
      raw.secretKeys.delete("rke2Token");
      const problems = problemsOf(raw, { requireSecrets: true });
      assert.deepEqual(
        problems.map((p) => p.key),
        [stackKey("rke2Token")],
      );
      assert.match(problems[0].message, /is not set; set it with `pulumi config set --secret/);
    });

    it("does not require secrets for offline render and verify", () => {
      assert.deepEqual(problemsOf(labRawConfig(), { requireSecrets: false }), []);
    });
  });

  describe("reporting", () => {
    it("reports every problem, not only the first", () => {
      const raw = labRawConfig();
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
      const raw = labWith("rke2.version", "1.35.6");
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
      labWith("nodes[1].ip", "192.168.122.300");
      assert.equal(getAt(labRawConfig(), "nodes[1].ip"), "192.168.122.21");
    });
  });
});
