/**
 * Seed 000 on real CoreDNS and the real libvirt dnsmasq: the estate as found stalls a pod's
 * lookup of the Rancher name; the rendered fix answers it at once and keeps cluster DNS intact.
 * With the fix and with seed 000's own fix, cluster names come from CoreDNS's real `kubernetes`
 * plugin reading a real kube-apiserver (`lab dns MODE cluster-api`: the control plane of the
 * pods' own cluster, real etcd and kube-apiserver, which the lab starts without pulumi).
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { helmChartConfigObject } from "../../components/cluster-dns/manifests";
import { clusterDnsChartValues } from "../../components/cluster-dns/values";
import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/stack-file";
import { loadEnvironmentModel } from "../../infra/config/validate";
import { evaluatePolicies } from "../../policy/evaluate";
import { corednsClusterDomainReachesKubernetes } from "../../policy/policies/coredns-cluster-domain-reaches-kubernetes";
import { nodeLocalCarriesFixZones } from "../../policy/policies/nodelocal-carries-fix-zones";
import { HELM_CHART_CONFIG_TYPE } from "../../components/model";
import { resource } from "../policy/util";
import {
  createClusterIpService,
  inNamespace,
  lab,
  LAB_DIR,
  LAB_STACK,
  labNs,
  REPO,
  run,
} from "./lab";

const SEED_FIXTURE = path.join(REPO, "test", "fixtures", "seed-000-helmchartconfig.yaml");

const POD = labNs("pod");

/** The real kubectl on the pods' own cluster's real apiserver (`lab dns MODE cluster-api`). */
const kubectl = (...args: string[]) =>
  run("kubectl", [
    "--kubeconfig",
    path.join(LAB_DIR, "kube", "cluster-api.kubeconfig"),
    "--request-timeout=10s",
    ...args,
  ]);

function getent(name: string) {
  return inNamespace(POD, ["getent", "ahosts", name], 60000);
}

function addressesOf(output: string): string[] {
  return [
    ...new Set(
      output
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split(/\s+/)[0]),
    ),
  ].sort();
}

function dig(server: string, name: string, type = "A", extra: string[] = []) {
  const r = inNamespace(POD, ["dig", "+time=3", "+tries=1", `@${server}`, name, type, ...extra]);
  const status = /status: (\w+)/.exec(r.stdout)?.[1] ?? "NO ANSWER";
  const answers = r.stdout
    .split("\n")
    .filter((l) => l && !l.startsWith(";") && new RegExp(`\\sIN\\s+${type}\\s`).test(l))
    .map((l) => l.trim().split(/\s+/).pop()!);
  return { status, answers: answers.sort(), ms: r.ms };
}

const SERVERS = ["192.168.122.20", "192.168.122.21", "192.168.122.22"];

describe("cluster DNS path (real CoreDNS and its kubernetes plugin on a real kube-apiserver, real dnsmasq)", function () {
  this.timeout(180000);
  const env = () =>
    Object.fromEntries(
      fs
        .readFileSync(path.join(LAB_DIR, "dns.env"), "utf8")
        .trim()
        .split("\n")
        .map((l) => l.split("=") as [string, string]),
    );

  describe("the estate as found (chart default Corefile)", () => {
    before(() => assert.equal(lab("dns", "default").status, 0));

    it("the libvirt dnsmasq never answers names under local", () => {
      const r = run("dig", ["+time=2", "+tries=1", "@192.168.122.1", "ai-ear.cn.local"]);
      assert.match(r.stdout, /timed out|no servers could be reached/);
      assert.doesNotMatch(r.stdout, /status: (REFUSED|SERVFAIL|NXDOMAIN)/);
    });

    it("a pod's relative lookup of ai-ear.cn stalls on ai-ear.cn.local (seed 000)", () => {
      const r = getent("ai-ear.cn");
      assert.ok(
        r.status !== 0 || r.ms >= 5000,
        `lookup returned in ${r.ms} ms with status ${r.status}`,
      );
    });

    it("the absolute name resolves to the three servers without a timeout", () => {
      const r = getent("ai-ear.cn.");
      assert.equal(r.status, 0);
      assert.deepEqual(addressesOf(r.stdout), SERVERS);
      assert.ok(r.ms < 4000, `absolute lookup took ${r.ms} ms`);
    });
  });

  describe("with the rendered fix", () => {
    before(async () => {
      const up = lab("dns", "stack", "cluster-api");
      assert.equal(up.status, 0, up.stderr);
      // A Service of the cluster, created with the real kubectl; the plugin learns it by its watch.
      const svc = createClusterIpService(kubectl, "my-svc");
      assert.ok(svc.status === 0 || /already exists/i.test(svc.stderr), svc.stderr);
      const { CLUSTER_DNS_IP, CLUSTER_DOMAIN } = env();
      for (let i = 0; i < 50; i++) {
        if (dig(CLUSTER_DNS_IP, `my-svc.default.svc.${CLUSTER_DOMAIN}`).status === "NOERROR")
          return;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      assert.fail("CoreDNS's kubernetes plugin never answered my-svc");
    });

    it("a pod's relative lookup of ai-ear.cn returns the three servers without a timeout", () => {
      const r = getent("ai-ear.cn");
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(addressesOf(r.stdout), SERVERS);
      assert.ok(r.ms < 4000, `relative lookup took ${r.ms} ms`);
    });

    it("names under local fail at once with NXDOMAIN", () => {
      const { CLUSTER_DNS_IP } = env();
      const r = dig(CLUSTER_DNS_IP, "ai-ear.cn.local");
      assert.equal(r.status, "NXDOMAIN");
    });

    it("keeps every answer under the cluster domain", () => {
      const { CLUSTER_DNS_IP, CLUSTER_DOMAIN } = env();
      assert.deepEqual(dig(CLUSTER_DNS_IP, `kubernetes.default.svc.${CLUSTER_DOMAIN}`).answers, [
        CLUSTER_DNS_IP.replace(/\.0\.10$/, ".0.1"),
      ]);
      assert.equal(dig(CLUSTER_DNS_IP, `nope.default.svc.${CLUSTER_DOMAIN}`).status, "NXDOMAIN");
      const short = inNamespace(POD, ["getent", "hosts", "my-svc"]);
      assert.equal(short.status, 0, "the search list no longer finds my-svc.default.svc");
    });

    it("answers AAAA for the Rancher name empty with NOERROR", () => {
      const { CLUSTER_DNS_IP } = env();
      const r = dig(CLUSTER_DNS_IP, "ai-ear.cn", "AAAA");
      assert.equal(r.status, "NOERROR");
      assert.deepEqual(r.answers, []);
    });

    it("the node-local cache sends the fix's zones to CoreDNS instead of the node's resolver", () => {
      const { NODELOCAL_ENABLED, NODELOCAL_IP } = env();
      assert.equal(NODELOCAL_ENABLED, "true");
      assert.equal(dig(NODELOCAL_IP, "ai-ear.cn.local").status, "NXDOMAIN");
      assert.deepEqual(dig(NODELOCAL_IP, "ai-ear.cn").answers, SERVERS);
    });
  });

  describe("the seed's own fix (its HelmChartConfig, rendered by the chart)", () => {
    before(() => assert.equal(lab("dns", "seed", "cluster-api").status, 0));
    after(() => assert.equal(lab("dns", "stack").status, 0));

    it("answers ai-ear.cn, but NXDOMAIN for every cluster service, and the policy flags it", async () => {
      const { CLUSTER_DNS_IP, CLUSTER_DOMAIN } = env();
      assert.deepEqual(dig(CLUSTER_DNS_IP, "ai-ear.cn").answers, SERVERS);
      assert.equal(
        dig(CLUSTER_DNS_IP, `kubernetes.default.svc.${CLUSTER_DOMAIN}`).status,
        "NXDOMAIN",
      );
      const seed = resource(
        HELM_CHART_CONFIG_TYPE,
        YAML.parse(fs.readFileSync(SEED_FIXTURE, "utf8")),
      );
      const violations = await evaluatePolicies([corednsClusterDomainReachesKubernetes], [seed]);
      assert.equal(violations.length, 1);
    });
  });

  describe("the fix behind the node-local cache of chart 1.46.002 (RKE2 v1.35.6), without extraClusterDomains", () => {
    before(() => assert.equal(lab("dns", "stack-missing-zones").status, 0));
    after(() => assert.equal(lab("dns", "stack").status, 0));

    it("times out on ai-ear.cn.local again, and the policy flags the values", async () => {
      const r = getent("ai-ear.cn");
      assert.ok(
        r.status !== 0 || r.ms >= 5000,
        `lookup returned in ${r.ms} ms with status ${r.status}`,
      );
      const model = loadEnvironmentModel(
        LAB_STACK,
        rawConfigFromStackFile(stackFilePath(LAB_STACK)),
        {
          requireSecrets: false,
        },
      );
      // The same values on the release whose chart ignores extraClusterDomains.
      const cluster = { ...model.rancher!.downstreamClusters[0], version: "v1.35.6+rke2r1" };
      const values = clusterDnsChartValues(model.dns, cluster);
      const hcc = resource(
        HELM_CHART_CONFIG_TYPE,
        helmChartConfigObject(values, cluster, model.dns),
      );
      const violations = await evaluatePolicies([nodeLocalCarriesFixZones], [hcc]);
      assert.match(
        violations[0]?.message ?? "",
        /rke2-coredns 1\.46\.002 \(RKE2 v1\.35\.6\+rke2r1\) renders sends (ai-ear\.cn, local|local, ai-ear\.cn)/,
      );
    });
  });
});
