/**
 * Seed 000 on real CoreDNS and the real libvirt dnsmasq: the estate as found stalls a pod's
 * lookup of the Rancher name; the rendered fix answers it at once and keeps cluster DNS intact.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { inNamespace, lab, LAB_DIR, run } from "./lab";

const POD = "rke2r-pod";

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

describe("cluster DNS path (real CoreDNS, real dnsmasq)", function () {
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
    before(() => assert.equal(lab("dns", "stack").status, 0));

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

  describe("the seed's own fix", () => {
    it("a bare `local` server block answers NXDOMAIN for every cluster service", () => {
      const { CLUSTER_DOMAIN } = env();
      const dir = fs.mkdtempSync(path.join(LAB_DIR, "seedfix-"));
      const zone = path.join(LAB_DIR, "dns", "cluster.zone");
      const corefile = path.join(dir, "Corefile");
      // Seed 000's HelmChartConfig: the default block plus `local { template ... rcode NXDOMAIN }`.
      fs.writeFileSync(
        corefile,
        [
          `.:5353 {`,
          `    errors`,
          `    file ${zone} ${CLUSTER_DOMAIN}`,
          `    forward . /etc/resolv.conf`,
          `}`,
          `local:5353 {`,
          `    template ANY ANY local {`,
          `        rcode NXDOMAIN`,
          `    }`,
          `}`,
        ].join("\n"),
      );
      const coredns = path.join(
        fs.readFileSync(path.join(LAB_DIR, "toolchain.path"), "utf8").trim(),
        "coredns",
      );
      const server = run("bash", [
        "-c",
        `ip netns exec rke2r-coredns ${coredns} -conf ${corefile} >${dir}/log 2>&1 & echo $!; sleep 1`,
      ]);
      try {
        const r = inNamespace("rke2r-coredns", [
          "dig",
          "+time=2",
          "+tries=1",
          "-p",
          "5353",
          "@127.0.0.1",
          `kubernetes.default.svc.${CLUSTER_DOMAIN}`,
        ]);
        assert.match(r.stdout, /status: NXDOMAIN/);
      } finally {
        run("kill", [server.stdout.trim()]);
      }
    });
  });
});
