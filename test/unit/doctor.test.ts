/**
 * doctor's offline parts: the stack file's secrets read as Pulumi wrote them, and the causes
 * named from facts in the facts scripts' own output formats. The reads themselves run against
 * the lab's hosts in test/e2e/doctor.test.ts.
 */
import * as assert from "assert/strict";
import * as path from "path";
import type { EnvironmentModel, NodeSpec } from "../../components/model";
import { parseNodeFacts as parsePreparation } from "../../components/node-preparation/render";
import { parseNodeFacts as parseRke2 } from "../../components/rke2-cluster/start-plan";
import {
  causesOf,
  type HostFacts,
  parseLoopLogs,
  parseSearchProbes,
  parseUpstreamProbes,
} from "../../infra/doctor/causes";
import { dnsEgressGaps } from "../../infra/doctor/dns-egress";
import { stackSecret } from "../../infra/doctor/stack-secrets";
import { diagnose } from "../../infra/doctor";
import { namespaceFacts } from "../../components/cluster-dns/egress-check-provider";
import { dnsEgressNetworkPolicyObject } from "../../components/cluster-dns/manifests";
import { labModel } from "../support/lab-stack";

/**
 * Written by the real pulumi v3.276.0 with the passphrase provider (its header says how); the
 * values are placeholders, not secrets.
 */
const FIXTURE = path.resolve(
  __dirname,
  "..",
  "..",
  "..",
  "test",
  "fixtures",
  "stack-secrets",
  "Pulumi.fixture.yaml",
);
const PASSPHRASE = "doctor-fixture passphrase";

describe("doctor: a stack file's secret read without Pulumi", function () {
  // PBKDF2 with a million rounds takes about a second per read on this machine.
  this.timeout(20000);

  it("opens what pulumi config set --secret wrote, with the stack's passphrase", () => {
    assert.equal(stackSecret(FIXTURE, "sshPrivateKey", PASSPHRASE), "fixture secret: not a key");
    assert.equal(stackSecret(FIXTURE, "rke2Token", PASSPHRASE), "K10fixture::server:fixture");
  });

  it("is undefined for a key the file does not set", () => {
    assert.equal(stackSecret(FIXTURE, "rancherToken", PASSPHRASE), undefined);
  });

  it("refuses a wrong passphrase, naming what to set and printing no secret", () => {
    assert.throws(
      () => stackSecret(FIXTURE, "sshPrivateKey", "not the passphrase"),
      (err: Error) =>
        /PULUMI_CONFIG_PASSPHRASE/.test(err.message) && !/fixture secret/.test(err.message),
    );
  });

  it("without a passphrase, says which variables or flag give one", () => {
    assert.throws(
      () => stackSecret(FIXTURE, "sshPrivateKey", undefined),
      /PULUMI_CONFIG_PASSPHRASE_FILE, or pass the key with --ssh-key/,
    );
  });
});

const node = (model: EnvironmentModel, octet: number): NodeSpec =>
  model.nodes.find((n) => n.ip === `192.168.122.${octet}`)!;

/** prepare-node.sh's report (its last lines), healthy unless `over` changes a line. */
function preparation(over: Record<string, string> = {}) {
  const lines = {
    iptables_service: "disabled",
    ip6tables_service: "disabled",
    firewalld_service: "disabled",
    firewalld_active: "false",
    nm_cloud_setup_service: "absent",
    nm_cloud_setup_timer: "absent",
    nm_cloud_setup_active: "false",
    reject_rules: "0",
    nm_config_b64: Buffer.from(
      "[keyfile]\nunmanaged-devices+=interface-name:kube-ipvs0;interface-name:cali*;" +
        "interface-name:vxlan.calico;interface-name:vxlan-v6.calico;interface-name:tunl*;" +
        "interface-name:flannel*;interface-name:wireguard.cali;interface-name:wg-v6.cali",
    ).toString("base64"),
    nm_replaces: "",
    kube_ipvs0: "down",
    rke2_installed: "true",
    reboot_required: "false",
    host_findings: "",
    ...over,
  };
  return parsePreparation(
    Object.entries(lines)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n"),
  );
}

/** etcdctl member list -w json as the lab's etcd 3.4 prints it (IDs decimal). */
const member = (id: string, octet: number, learner = false) =>
  `{"ID":${id},"name":"sza122${String(octet).padStart(3, "0")}.local-0000000${octet % 10}",` +
  `"peerURLs":["https://192.168.122.${octet}:2380"]${learner ? ',"isLearner":true' : ""}}`;
/** The list as the first member's etcd answers it (its ID in the header). */
const memberList = (...members: string[]) =>
  `{"header":{"cluster_id":14841639068965178418,"member_id":${/"ID":(\d+)/.exec(members[0])![1]},` +
  `"raft_term":3},"members":[${members.join(",")}]}`;

/** rke2-facts.sh's report for a running server; `members` is the list its etcd answered. */
function rke2(octet: number, members?: string, active = true) {
  const name = `sza122${String(octet).padStart(3, "0")}.local`;
  const lines = [
    "version=v1.35.7+rke2r1",
    "unit=yes",
    `active=${active ? "yes" : "no"}`,
    "config_sha256=none",
    "data_dir=/var/lib/rancher/rke2",
    "other_unit=no",
    "other_active=no",
    `host_name=${name}`,
    `addresses=127.0.0.1 192.168.122.${octet}`,
    "restart_pending=none",
    "etcd_data=yes",
    `etcd_name=${Buffer.from(`${name}-0000000${octet % 10}`).toString("base64")}`,
    members
      ? `members=${Buffer.from(members).toString("base64")}`
      : "members_error=nothing listens on 127.0.0.1:2379",
  ];
  return parseRke2(lines.join("\n"), name, "server");
}

describe("doctor: causes from facts", () => {
  const model = labModel();
  const healthy = (octet: number, members: string): HostFacts => ({
    node: node(model, octet),
    preparation: { ok: preparation() },
    rke2: { ok: rke2(octet, members) },
    etcdPorts: {
      ok: [20, 21, 22]
        .filter((o) => o !== octet)
        .flatMap((o) =>
          [2379, 2380].map((port) => ({
            peer: `192.168.122.${o}`,
            port,
            verdict: "open" as const,
          })),
        ),
    },
    search: {
      ok: parseSearchProbes(
        "node local 192.168.122.1 silent 2004\ncluster local 10.13.0.10 answered NXDOMAIN 3\n",
      ),
    },
  });
  const three = memberList(member("1", 20), member("2", 21), member("3", 22));

  it("finds nothing on a converged estate", () => {
    const { findings, unchecked } = causesOf(
      model,
      [20, 21, 22].map((o) => healthy(o, three)),
    );
    assert.deepEqual(findings, []);
    assert.deepEqual(unchecked, []);
  });

  it("names seed 003 as found: the firewall on .21/.22, and .22 stuck behind the learner .21", () => {
    const learner = memberList(member("1", 20), member("2", 21, true));
    const hosts: HostFacts[] = [
      healthy(20, learner),
      {
        ...healthy(21, learner),
        preparation: { ok: preparation({ iptables_service: "enabled", reject_rules: "2" }) },
      },
      {
        ...healthy(22, learner),
        rke2: { ok: rke2(22) },
        preparation: { ok: preparation({ iptables_service: "enabled", reject_rules: "2" }) },
      },
    ];
    hosts[0] = {
      ...hosts[0],
      etcdPorts: {
        ok: [
          { peer: "192.168.122.21", port: 2380, verdict: "prohibited" },
          { peer: "192.168.122.22", port: 2380, verdict: "prohibited" },
        ],
      },
    };
    const { findings } = causesOf(model, hosts);
    const on = (host: string, cause: string) =>
      findings.filter((f) => f.host === host && f.cause === cause).map((f) => f.summary);
    for (const host of ["sza122021.local", "sza122022.local"])
      assert.deepEqual(on(host, "seed 003: firewall"), [
        "Rocky's default firewall is in force: iptables.service enabled: the REJECT rules come " +
          "back at the next boot; 2 REJECT rule(s) in INPUT/FORWARD refuse RKE2's and etcd's traffic now",
      ]);
    assert.deepEqual(on("sza122020.local", "seed 003: firewall"), [
      "sza122020.local cannot reach etcd's ports on sza122021.local, sza122022.local",
    ]);
    assert.match(
      on("sza122021.local", "seed 003: etcd learner")[0],
      /is an etcd learner that has not been promoted/,
    );
    assert.match(
      on("sza122022.local", "seed 003: etcd learner")[0],
      /not in etcd's member list: it is stuck behind sza122021\.local, the learner/,
    );
    assert.ok(
      findings.every((f) => f.host !== "sza122020.local" || f.cause === "seed 003: firewall"),
    );
  });

  it("names seed 000 only where the cluster DNS leaves the search domain unanswered too", () => {
    const hosts = [20, 21, 22].map((o) => healthy(o, three));
    hosts[1] = {
      ...hosts[1],
      search: {
        ok: parseSearchProbes(
          "node local 192.168.122.1 silent 2003\ncluster local 10.13.0.10 silent 2001\n",
        ),
      },
    };
    const { findings } = causesOf(model, hosts);
    assert.deepEqual(
      findings.map((f) => [f.host, f.cause]),
      [["sza122021.local", "seed 000: search domain"]],
    );
    assert.match(
      findings[0].evidence,
      /dig ai-ear\.cn\.local: no answer from 192\.168\.122\.1 in 2\.0 s/,
    );
    assert.match(findings[0].remedy, /dns\.neutralizedSearchDomains lists "local"/);
  });

  it("claims no cause where the cluster DNS cannot be reached from the node; it says so", () => {
    const hosts = [20, 21, 22].map((o) => healthy(o, three));
    hosts[0] = {
      ...hosts[0],
      search: {
        ok: parseSearchProbes(
          "node local 192.168.122.1 silent 2003\ncluster local 10.13.0.10 unreachable 1\n",
        ),
      },
    };
    const { findings, unchecked } = causesOf(model, hosts);
    assert.deepEqual(findings, []);
    assert.match(unchecked[0].reason, /cluster DNS 10\.13\.0\.10 cannot be reached from the node/);
  });

  it("names seed 004's silent upstream, and an unreachable host as a finding of its own", () => {
    const hosts = [20, 21, 22].map((o) => healthy(o, three));
    hosts[0] = {
      ...hosts[0],
      upstreams: {
        ok: parseUpstreamProbes("192.168.122.1 answered NXDOMAIN\n192.168.122.99 silent\n"),
      },
    };
    hosts[2] = {
      node: node(model, 22),
      unreachable: "cannot reach root@192.168.122.22:22: ETIMEDOUT",
    };
    const { findings, unchecked } = causesOf(model, hosts);
    assert.deepEqual(
      findings.map((f) => [f.host, f.cause]),
      [
        ["sza122020.local", "seed 004: upstream resolver"],
        ["sza122022.local", "unreachable"],
      ],
    );
    assert.match(findings[0].summary, /192\.168\.122\.99 does not answer/);
    assert.deepEqual(unchecked, []);
  });

  it("names seed 000 from the cluster agent's log only while its latest attempt failed", () => {
    const failed =
      'time="2026-12-05T11:43:26Z" level=error msg="Failed to dial steve aggregation server: dial tcp: lookup ai-ear.cn: i/o timeout"';
    const connected = 'time="2026-12-05T11:44:01Z" level=info msg="Connected to proxy"';
    const downstream = (lines: string[]): HostFacts[] => [
      ...[20, 21, 22].map((o) => healthy(o, three)),
      {
        node: {
          ...node(model, 20),
          name: "sza122031.local",
          ip: "192.168.122.31",
          cluster: "uat1",
        },
        agentLog: { ok: lines },
      },
    ];
    const agent = (lines: string[]) =>
      causesOf(model, downstream(lines)).findings.filter(
        (f) => f.cause === "seed 000: cluster agent",
      );
    assert.deepEqual(
      agent([connected, failed]).map((f) => [f.host, f.evidence]),
      [["sza122031.local", `cattle-cluster-agent's log: ${failed}`]],
    );
    assert.deepEqual(agent([failed, connected]), []);
    assert.deepEqual(agent([]), []);
  });

  it("names a record the stack keeps on the libvirt network that the network lacks, by name and address", () => {
    const hosts = [20, 21, 22].map((o) => healthy(o, three));
    const kvm = (records: { ip: string; hostnames: string[] }[]) =>
      causesOf(model, hosts, { host: "libvirt on 192.168.122.1", records: { ok: records } })
        .findings;
    const all = ["20", "21", "22"].map((o) => ({
      ip: `192.168.122.${o}`,
      hostnames: ["ai-ear.cn"],
    }));
    assert.deepEqual(kvm(all), []);
    assert.deepEqual(
      kvm([all[0], { ip: "192.168.122.21", hostnames: ["other.local"] }]).map((f) => [
        f.cause,
        f.summary,
      ]),
      [
        ["drift", "the libvirt network default does not answer ai-ear.cn with 192.168.122.21"],
        ["drift", "the libvirt network default does not answer ai-ear.cn with 192.168.122.22"],
      ],
    );
    assert.deepEqual(
      causesOf(model, hosts, {
        host: "libvirt on 192.168.122.1",
        unreachable: "ECONNREFUSED",
      }).findings.map((f) => [f.host, f.cause]),
      [["libvirt on 192.168.122.1", "unreachable"]],
    );
  });

  it("names seed 004's loop from a kube-system CoreDNS log, on its node", () => {
    const out =
      "loop kube-system_node-local-dns-x_0f1e/node-cache 2026-12-05T12:20:01.5Z stdout F [FATAL] plugin/loop: " +
      'Loop (127.0.0.77:41000 -> 127.0.0.77:53) detected for zone ".", see https://coredns.io/plugins/loop#troubleshooting. Query: "HINFO 1.2."\n';
    const hosts = [20, 21, 22].map((o) => healthy(o, three));
    hosts[2] = { ...hosts[2], loopLogs: { ok: parseLoopLogs(out) } };
    const found = causesOf(model, hosts).findings;
    assert.deepEqual(
      found.map((f) => [f.host, f.cause]),
      [["sza122022.local", "seed 004: forwarding loop"]],
    );
    assert.match(found[0].summary, /\(node-local-dns-x\) stopped on a forwarding loop/);
    assert.match(
      found[0].evidence,
      /^its log: \[FATAL\] plugin\/loop: Loop \(127\.0\.0\.77:41000 -> 127\.0\.0\.77:53\)/,
    );
    assert.deepEqual(parseLoopLogs(""), []);
  });

  it("reports a check that failed on a host as not checked, never as healthy", () => {
    const hosts = [20, 21, 22].map((o) => healthy(o, three));
    hosts[1] = { ...hosts[1], preparation: { error: "dig is not installed" } };
    const { findings, unchecked } = causesOf(model, hosts);
    assert.deepEqual(findings, []);
    assert.deepEqual(unchecked, [
      { host: "sza122021.local", check: "node preparation", reason: "dig is not installed" },
    ]);
  });
});

describe("doctor: seed 001 from a namespace's NetworkPolicies", () => {
  const NODE_LOCAL = "169.254.20.10";
  /** A NetworkPolicyList as the API returns it. */
  const list = (...specs: Record<string, unknown>[]) => ({
    items: specs.map((spec, i) => ({ metadata: { name: `p${i}` }, spec })),
  });
  const denyAll = { podSelector: {}, policyTypes: ["Egress"] };
  const pod = {
    items: [{ metadata: { name: "web-1", labels: { app: "web" } }, status: { phase: "Running" } }],
  };
  const gaps = (policies: ReturnType<typeof list>) =>
    dnsEgressGaps(namespaceFacts("default", true, policies, pod), NODE_LOCAL).map((g) => [
      g.gap,
      g.subjects,
      g.policies,
    ]);

  it("finds nothing where no policy isolates egress", () => {
    assert.deepEqual(gaps(list()), []);
  });

  it("names a namespace whose isolated pods may send DNS over TCP only (the protocol defaults to TCP)", () => {
    assert.deepEqual(
      gaps(list(denyAll, { podSelector: {}, egress: [{ ports: [{ port: 53 }] }] })),
      [["TCP only", ["web-1", "new pods without labels"], ["p0", "p1"]]],
    );
  });

  it("names isolated pods with no DNS at all, and only those the policy selects", () => {
    assert.deepEqual(
      gaps(list({ podSelector: { matchLabels: { app: "web" } }, policyTypes: ["Egress"] })),
      [["no DNS", ["web-1"], ["p0"]]],
    );
  });

  it("names an allowance that misses the node-local address, or excepts it", () => {
    const udp = [{ protocol: "UDP", port: 53 }];
    assert.deepEqual(
      gaps(
        list(denyAll, {
          podSelector: {},
          egress: [{ ports: udp, to: [{ ipBlock: { cidr: "10.43.0.10/32" } }] }],
        }),
      ),
      [["no node-local address", ["web-1", "new pods without labels"], ["p0", "p1"]]],
    );
    assert.deepEqual(
      gaps(
        list(denyAll, {
          podSelector: {},
          egress: [
            {
              ports: udp,
              to: [{ ipBlock: { cidr: "169.254.0.0/16", except: ["169.254.20.0/24"] } }],
            },
          ],
        }),
      ),
      [["no node-local address", ["web-1", "new pods without labels"], ["p0", "p1"]]],
    );
  });

  it("accepts seed 001's own fix, a port range over 53, and the policy the stack renders", () => {
    const seedFix = {
      podSelector: {},
      egress: [
        {
          ports: [
            { port: 53, protocol: "UDP" },
            { port: 53, protocol: "TCP" },
          ],
          to: [{ ipBlock: { cidr: "169.254.20.10/32" } }, { ipBlock: { cidr: "10.96.0.10/32" } }],
        },
      ],
    };
    assert.deepEqual(gaps(list(denyAll, seedFix)), []);
    assert.deepEqual(
      gaps(
        list(denyAll, {
          podSelector: {},
          egress: [{ ports: [{ protocol: "UDP", port: 1, endPort: 1024 }] }],
        }),
      ),
      [],
    );
    const model = labModel();
    const rendered = dnsEgressNetworkPolicyObject("default", model.dns, model.management) as {
      spec: Record<string, unknown>;
    };
    assert.deepEqual(gaps(list(denyAll, rendered.spec)), []);
  });
});

describe("doctor for a program: diagnose(settings)", () => {
  it("refuses settings the validator refuses, naming each key, before it connects anywhere", async () => {
    await assert.rejects(
      diagnose({ nodes: [{ name: "Bad_Name", ip: "192.168.122.20", role: "server" }] } as never, {
        sshPrivateKey: "not used",
      }),
      (err: Error) =>
        /^diagnose: \d+ problem\(s\) in its settings:/.test(err.message) &&
        / {2}- settings\.nodes\[0\]\.name: "Bad_Name"/.test(err.message),
    );
  });
});
