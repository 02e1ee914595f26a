/**
 * `dns.policyNamespaces` as allowances, the isolation opt-in and its refusal for Rancher's and
 * RKE2's own namespaces; the warnings `verify` prints; the live decision from a namespace's
 * NetworkPolicies and pods (the real tier reads them from a real apiserver).
 */
import * as assert from "assert/strict";
import {
  dnsPolicyRefusal,
  egressIsolationOf,
  NamespaceEgressFacts,
  selectorMatches,
} from "../../components/cluster-dns/egress-isolation";
import { factsFromScript, workloadsOf } from "../../components/cluster-dns/egress-check-provider";
import { configWarnings, validateEnvironment } from "../../infra/config/validate";
import {
  estateRawConfig,
  labManagementOutputs,
  MutableRawConfig,
  uat1RawConfig,
  uat1StandaloneRawConfig,
} from "../support/lab-stack";
import { estateWith, problemsOf, setAt, stackKey } from "./fixtures";

const NAMESPACES = ["dns", "policyNamespaces"];

function modelOf(raw: MutableRawConfig) {
  const { model, problems } = validateEnvironment("lab", raw, { requireSecrets: false });
  assert.deepEqual(problems, []);
  assert.ok(model);
  return model;
}

/** The warnings of a valid stack config, as `verify` prints them. */
function allWarningsOf(raw: MutableRawConfig) {
  return configWarnings(modelOf(raw), raw);
}

const ONE_UPSTREAM = stackKey("dns.upstreamResolvers");

/** The same, but the one on a single upstream resolver, which the shipped stacks earn. */
function warningsOf(raw: MutableRawConfig) {
  return allWarningsOf(raw).filter((w) => w.key !== ONE_UPSTREAM);
}

/** uat1 giving Rancher's values itself (no managementStack), with one value replaced. */
function uat1With(path: string[], value: unknown): MutableRawConfig {
  return setAt(uat1StandaloneRawConfig(), path, value);
}

describe("dns.policyNamespaces", () => {
  it("reads a name as an allowance and { name, isolate: true } as the opt-in", () => {
    const model = modelOf(estateWith(NAMESPACES, ["default", { name: "team-a", isolate: true }]));
    assert.deepEqual(model.dns.policyNamespaces, [
      { name: "default", isolate: false },
      { name: "team-a", isolate: true },
    ]);
  });

  for (const ns of [
    "cattle-system",
    "kube-system",
    "cattle-fleet-system",
    "cattle-fleet-local-system",
  ]) {
    it(`refuses to isolate ${ns}, naming the key`, () => {
      const problems = problemsOf(estateWith(NAMESPACES, [{ name: ns, isolate: true }]));
      const problem = problems.find((p) => p.key === stackKey("dns.policyNamespaces[0].isolate"));
      assert.ok(problem, JSON.stringify(problems));
      assert.match(problem.message, new RegExp(`${ns} is (Rancher|RKE2)'s own namespace`));
      assert.match(problem.message, /Remove isolate/);
    });
  }

  it("reports a misspelt key of an entry with the closest known key", () => {
    const problems = problemsOf(estateWith(NAMESPACES, [{ name: "team-a", isolat: true }]));
    assert.ok(
      problems.some(
        (p) =>
          p.key === stackKey("dns.policyNamespaces[0].isolat") &&
          p.message.includes(stackKey("dns.policyNamespaces[0].isolate")),
      ),
      JSON.stringify(problems),
    );
  });

  it("rejects an entry without a name, a bad name and a namespace listed twice", () => {
    const problems = problemsOf(
      estateWith(NAMESPACES, [{ isolate: true }, "Bad_Name", "default", { name: "default" }]),
    );
    const keys = problems.map((p) => p.key);
    assert.ok(keys.includes(stackKey("dns.policyNamespaces[0].name")), keys.join("\n"));
    assert.ok(keys.includes(stackKey("dns.policyNamespaces[1]")), keys.join("\n"));
    assert.ok(keys.includes(stackKey("dns.policyNamespaces[3].name")), keys.join("\n"));
  });

  it("warns that a listed cattle-system gets the allowance only where up finds an egress restriction", () => {
    const warnings = warningsOf(estateWith(NAMESPACES, ["default", "cattle-system"]));
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.equal(warnings[0].key, stackKey("dns.policyNamespaces[1]"));
    assert.match(warnings[0].message, /Rancher's own namespace and can never be isolated/);
    assert.match(warnings[0].message, /`up` reads from the cluster/);
  });

  it("gives the shipped stacks one warning only: their single upstream resolver, the libvirt network's dnsmasq", () => {
    const keys = (warnings: readonly { key: string }[]) => warnings.map((w) => w.key);
    assert.deepEqual(keys(allWarningsOf(estateRawConfig())), [ONE_UPSTREAM]);
    assert.deepEqual(keys(allWarningsOf(uat1StandaloneRawConfig())), [ONE_UPSTREAM]);
    const uat1 = uat1RawConfig();
    const { model } = validateEnvironment("uat1", uat1, {
      requireSecrets: false,
      managementOutputs: labManagementOutputs(),
    });
    assert.ok(model);
    assert.deepEqual(keys(configWarnings(model, uat1)), [ONE_UPSTREAM]);
    assert.deepEqual(warningsOf(uat1With(["dns", "staticHosts"], {})), []);
  });

  it("warns on a single upstream resolver, naming the key, and not on two (seed 004)", () => {
    const [one] = allWarningsOf(estateRawConfig()).filter((w) => w.key === ONE_UPSTREAM);
    assert.match(
      one.message,
      /only one upstream resolver \(192\.168\.122\.1\).*configure at least two/,
    );
    const two = estateWith(["dns", "upstreamResolvers"], ["192.168.122.1", "192.168.122.2"]);
    assert.deepEqual(
      allWarningsOf(two).filter((w) => w.key === ONE_UPSTREAM),
      [],
    );
  });
});

describe("the Rancher host's answer in downstream clusters' DNS", () => {
  it("warns when a downstream cluster's DNS has no answer for the Rancher host, naming cluster, host and keys", () => {
    let raw = uat1With(["dns", "staticHosts"], {});
    raw = setAt(raw, ["libvirt", "dnsRecords"], {});
    const warnings = warningsOf(raw);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    const [w] = warnings;
    assert.equal(w.key, stackKey("rancher.downstreamClusters[0]"));
    assert.match(w.message, /cluster uat1: .* Rancher's host ai-ear\.cn/);
    for (const key of [
      'dns.staticHosts["ai-ear.cn"]',
      'libvirt.dnsRecords["ai-ear.cn"]',
      "nodes",
    ]) {
      assert.ok(w.message.includes(stackKey(key)), w.message);
    }
  });

  for (const [shape, raw] of [
    ["with management servers", () => estateRawConfig()],
    ["downstream clusters only", () => uat1With(["dns", "staticHosts"], {})],
    [
      "downstream clusters only, without libvirt records",
      () => setAt(uat1With(["dns", "staticHosts"], {}), ["libvirt", "dnsRecords"], {}),
    ],
  ] as const) {
    it(`refuses a neutralised search domain that contains the Rancher host (${shape})`, () => {
      const problems = problemsOf(
        setAt(raw(), ["dns", "neutralizedSearchDomains"], ["local", "cn"]),
      );
      const problem = problems.find((p) => p.key === stackKey("dns.neutralizedSearchDomains[1]"));
      assert.ok(problem, JSON.stringify(problems));
      assert.match(problem.message, /"cn" contains Rancher's host ai-ear\.cn/);
      assert.ok(problem.message.includes(stackKey("rancher.url")), problem.message);
    });
  }

  it("accepts neutralising local beside the Rancher host ai-ear.cn", () => {
    assert.deepEqual(problemsOf(estateRawConfig()), []);
  });
});

describe("egress isolation from a namespace's live policies and pods", () => {
  const denyAll = { name: "default-deny-egress", podSelector: {}, policyTypes: ["Egress"] };
  const ours = { name: "allow-dns-egress", podSelector: {}, policyTypes: ["Egress"] };
  const pods = [
    { name: "rancher-6c9d", labels: { app: "rancher" }, phase: "Running" },
    { name: "webhook-77f1", labels: { app: "rancher-webhook" }, phase: "Running" },
  ];
  const facts = (
    policies: NamespaceEgressFacts["policies"],
    workloads: NamespaceEgressFacts["workloads"] = [],
  ): NamespaceEgressFacts => ({
    namespace: "team-a",
    exists: true,
    policies,
    pods,
    workloads,
  });
  const allowance = { name: "team-a", isolate: false };

  it("lets the allowance into a namespace whose own policy isolates every pod for egress", () => {
    assert.equal(dnsPolicyRefusal(facts([denyAll]), allowance, "cluster management"), undefined);
  });

  it("refuses a namespace without an egress policy, naming namespace, pods and the stack key", () => {
    const message = dnsPolicyRefusal(facts([]), allowance, "cluster management");
    assert.ok(message);
    assert.match(
      message,
      /namespace team-a on cluster management: no NetworkPolicy there restricts egress/,
    );
    assert.match(message, /cut pod\(s\) rancher-6c9d, webhook-77f1 off/);
    assert.match(message, /rke2-remediation:dns\.policyNamespaces entry "team-a"/);
    assert.match(message, /isolate: true/);
  });

  it("does not count its own allow-dns-egress as an existing restriction", () => {
    assert.ok(dnsPolicyRefusal(facts([ours]), allowance, "cluster management"));
  });

  it("does not count an ingress-only policy", () => {
    const ingress = { name: "ingress-only", podSelector: {}, policyTypes: ["Ingress"] };
    assert.ok(dnsPolicyRefusal(facts([ingress]), allowance, "cluster management"));
  });

  it("counts a policy with egress rules and no policyTypes", () => {
    const legacy = { name: "legacy", podSelector: {}, egress: [{ to: [] }] };
    assert.equal(dnsPolicyRefusal(facts([legacy]), allowance, "x"), undefined);
  });

  it("names only the pods no egress policy selects", () => {
    const rancherOnly = {
      name: "rancher-egress",
      podSelector: { matchLabels: { app: "rancher" } },
      policyTypes: ["Egress"],
    };
    assert.deepEqual(egressIsolationOf(facts([rancherOnly])).unrestrictedPods, ["webhook-77f1"]);
    assert.match(
      dnsPolicyRefusal(facts([rancherOnly]), allowance, "x") ?? "",
      /\(rancher-egress\) do not select every pod or pod template, .* cut pod\(s\) webhook-77f1 off/,
    );
  });

  describe("judges the pods to come by the templates of the namespace's workloads", () => {
    // Its own policy covers the running Deployment's pods; the CronJob's pods carry other labels.
    const appEgress = {
      name: "app-egress",
      podSelector: {
        matchExpressions: [{ key: "app", operator: "In", values: ["rancher", "rancher-webhook"] }],
      },
      policyTypes: ["Egress"],
    };
    const deployment = { kind: "Deployment", name: "rancher", templateLabels: { app: "rancher" } };
    const cronJob = { kind: "CronJob", name: "report", templateLabels: { app: "report" } };

    it("refuses a namespace whose policy covers its running pods but not its CronJob's template", () => {
      const isolation = egressIsolationOf(facts([appEgress], [deployment, cronJob]));
      assert.deepEqual(isolation.unrestrictedPods, []);
      assert.deepEqual(isolation.unrestrictedWorkloads, ["CronJob/report"]);
      assert.match(
        dnsPolicyRefusal(facts([appEgress], [deployment, cronJob]), allowance, "x") ?? "",
        /\(app-egress\) do not select every pod or pod template, .* cut the pods of CronJob\/report off from everything but DNS/,
      );
    });

    it("lets it in once a policy selects the CronJob's template too", () => {
      const reportEgress = {
        name: "report-egress",
        podSelector: { matchLabels: { app: "report" } },
        policyTypes: ["Egress"],
      };
      const both = facts([appEgress, reportEgress], [deployment, cronJob]);
      assert.equal(dnsPolicyRefusal(both, allowance, "x"), undefined);
    });

    it("leaves out a Job that finished: it starts no pod again", () => {
      const done = {
        kind: "Job",
        name: "migrate",
        templateLabels: { app: "migrate" },
        finished: true,
      };
      const running = { ...done, name: "backfill", finished: undefined };
      assert.deepEqual(
        egressIsolationOf(facts([appEgress], [done, running])).unrestrictedWorkloads,
        ["Job/backfill"],
      );
    });

    it("reads each kind's template where the API keeps it, the kind from kubectl's List or the typed list", () => {
      const template = (labels: Record<string, string>) => ({ metadata: { labels } });
      const mixed = {
        kind: "List",
        items: [
          {
            kind: "Deployment",
            metadata: { name: "web" },
            spec: { template: template({ app: "web" }) },
          },
          {
            kind: "CronJob",
            metadata: { name: "report" },
            spec: { jobTemplate: { spec: { template: template({ app: "report" }) } } },
          },
          {
            kind: "Job",
            metadata: { name: "migrate" },
            spec: { template: template({ app: "migrate" }) },
            status: { conditions: [{ type: "Complete", status: "True" }] },
          },
        ],
      };
      const typed = {
        kind: "StatefulSetList",
        items: [{ metadata: { name: "db" }, spec: { template: template({ app: "db" }) } }],
      };
      assert.deepEqual(
        [...workloadsOf(mixed), ...workloadsOf(typed)],
        [
          { kind: "Deployment", name: "web", templateLabels: { app: "web" } },
          { kind: "CronJob", name: "report", templateLabels: { app: "report" } },
          { kind: "Job", name: "migrate", templateLabels: { app: "migrate" }, finished: true },
          { kind: "StatefulSet", name: "db", templateLabels: { app: "db" } },
        ],
      );
    });

    it("reads egress-facts.sh's fifth field as the namespace's workloads", () => {
      const list = JSON.stringify({
        kind: "List",
        items: [
          {
            kind: "CronJob",
            metadata: { name: "report" },
            spec: {
              jobTemplate: { spec: { template: { metadata: { labels: { app: "report" } } } } },
            },
          },
        ],
      });
      const [got] = factsFromScript(`team-a\t1\t{}\t{}\t${list}\n`, [allowance]);
      assert.deepEqual(got.workloads, [
        { kind: "CronJob", name: "report", templateLabels: { app: "report" } },
      ]);
    });
  });

  it("isolates an opted-in namespace, and refuses one that does not exist", () => {
    assert.equal(dnsPolicyRefusal(facts([]), { name: "team-a", isolate: true }, "x"), undefined);
    const missing = { namespace: "team-b", exists: false, policies: [], pods: [], workloads: [] };
    assert.match(
      dnsPolicyRefusal(missing, { name: "team-b", isolate: true }, "x") ?? "",
      /namespace team-b does not exist/,
    );
  });

  it("says a system namespace can never be isolated instead of offering isolate", () => {
    const cattle = { ...facts([]), namespace: "cattle-system" };
    const message = dnsPolicyRefusal(cattle, { name: "cattle-system", isolate: false }, "x") ?? "";
    assert.match(message, /cattle-system is Rancher's own namespace and can never be isolated/);
    assert.doesNotMatch(message, /opt in with isolate/);
  });

  it("matches label selectors as Kubernetes does", () => {
    const labels = { app: "rancher", tier: "web" };
    assert.equal(selectorMatches({}, labels), true);
    assert.equal(selectorMatches({ matchLabels: { app: "rancher" } }, labels), true);
    assert.equal(selectorMatches({ matchLabels: { app: "fleet" } }, labels), false);
    const expr = (operator: string, values?: string[]) => ({
      matchExpressions: [{ key: "tier", operator, values }],
    });
    assert.equal(selectorMatches(expr("In", ["web", "db"]), labels), true);
    assert.equal(selectorMatches(expr("NotIn", ["web"]), labels), false);
    assert.equal(selectorMatches(expr("NotIn", ["web"]), { app: "x" }), true);
    assert.equal(selectorMatches(expr("Exists"), labels), true);
    assert.equal(selectorMatches(expr("DoesNotExist"), labels), false);
  });

  it("reads a cluster RKE2 has not started as one without policies", () => {
    const got = factsFromScript("not-running\n", [
      { name: "default", isolate: false },
      { name: "team-a", isolate: true },
    ]);
    assert.deepEqual(
      got.map((f) => [f.namespace, f.exists, f.policies.length]),
      [
        ["default", true, 0],
        ["team-a", false, 0],
      ],
    );
  });
});
