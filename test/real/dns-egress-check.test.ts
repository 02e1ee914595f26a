/**
 * The live check in front of the DNS egress NetworkPolicy, against real NetworkPolicy and Pod
 * objects on a real kube-apiserver (`lab dns MODE cluster-api`: the control plane of the pods'
 * own cluster, real etcd and kube-apiserver, which the lab starts without pulumi), read through
 * a kubeconfig as `rke2.dnsDelivery: helmChartConfig` reads them; and the same check over real
 * SSH on a lab server where RKE2 has not started.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import {
  factsFromScript,
  KubeEgressCheckState,
  kubeEgressCheckProvider,
  refusalsOf,
  SshEgressCheckState,
  sshEgressCheckProvider,
} from "../../components/cluster-dns/egress-check-provider";
import {
  dnsEgressNetworkPolicyObject,
  renderManifest,
} from "../../components/cluster-dns/manifests";
import { estateModel } from "../support/lab-stack";
import { lab, LAB_DIR, nodeConnection, run, stepKey } from "./lab";

const KUBECONFIG = path.join(LAB_DIR, "kube", "cluster-api.kubeconfig");
/** The real kubectl the toolchain built, on the real apiserver. */
const kubectl = (...args: string[]) =>
  run("kubectl", ["--kubeconfig", KUBECONFIG, "--request-timeout=10s", ...args]);
const apply = (manifest: string) => {
  const file = path.join(LAB_DIR, "dns-egress-check.yaml");
  fs.writeFileSync(file, manifest);
  const r = kubectl("apply", "-f", file);
  assert.equal(r.status, 0, r.stderr);
};

const OPEN = "dnscheck-open";
const RESTRICTED = "dnscheck-restricted";

/** A namespace with one pod (the apiserver admits it; no kubelet runs it) and its service account. */
function namespaceWithPod(ns: string, pod: string): void {
  apply(
    [
      `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${ns}\n`,
      `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: ${ns}\n`,
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${pod}\n  namespace: ${ns}\n  labels:\n    app: ${pod}\n` +
        `spec:\n  automountServiceAccountToken: false\n  containers:\n  - name: main\n    image: registry.invalid/app:1\n`,
    ].join("---\n"),
  );
}

function state(namespaces: { name: string; isolate: boolean }[]): KubeEgressCheckState {
  return {
    cluster: "lab",
    kubeconfig: fs.readFileSync(KUBECONFIG, "utf8"),
    namespaces,
    refusals: [],
  };
}

function networkPolicies(ns: string): { name: string; policyTypes: string[] }[] {
  const r = kubectl("-n", ns, "get", "networkpolicies", "-o", "json");
  assert.equal(r.status, 0, r.stderr);
  return (
    JSON.parse(r.stdout) as {
      items: { metadata: { name: string }; spec: { policyTypes: string[] } }[];
    }
  ).items.map((i) => ({ name: i.metadata.name, policyTypes: i.spec.policyTypes }));
}

describe("DNS egress check on real NetworkPolicies (real kube-apiserver, real SSH)", function () {
  this.timeout(300000);
  const model = estateModel();
  const allowance = renderManifest(
    dnsEgressNetworkPolicyObject(RESTRICTED, model.dns, model.management),
  );

  before(() => {
    const up = lab("dns", "stack", "cluster-api");
    assert.equal(up.status, 0, up.stderr);
    namespaceWithPod(OPEN, "web-open");
    namespaceWithPod(RESTRICTED, "web-restricted");
    // The namespace's own default-deny egress, as an administrator writes it.
    apply(
      `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: default-deny-egress\n` +
        `  namespace: ${RESTRICTED}\nspec:\n  podSelector: {}\n  policyTypes: [Egress]\n`,
    );
  });

  after(() => {
    for (const ns of [OPEN, RESTRICTED]) kubectl("delete", "namespace", ns, "--wait=false");
  });

  it("refuses a namespace without a default-deny egress policy, naming it, its pod and the stack key", async () => {
    assert.deepEqual(networkPolicies(OPEN), []);
    await assert.rejects(
      kubeEgressCheckProvider.create!(state([{ name: OPEN, isolate: false }])),
      (err: Error) => {
        assert.match(
          err.message,
          new RegExp(`namespace ${OPEN} on cluster lab \\(192\\.168\\.122\\.249:6443\\)`),
        );
        assert.match(err.message, /no NetworkPolicy there restricts egress/);
        assert.match(err.message, /cut pod\(s\) web-open off from everything but DNS/);
        assert.match(
          err.message,
          new RegExp(`rke2-remediation:dns\\.policyNamespaces entry "${OPEN}"`),
        );
        return true;
      },
    );
    // Nothing was written to the cluster by the check.
    assert.deepEqual(networkPolicies(OPEN), []);
  });

  it("lets the allowance into a namespace whose own policy isolates its pods for egress", async () => {
    const { outs } = await kubeEgressCheckProvider.create!(
      state([{ name: RESTRICTED, isolate: false }]),
    );
    assert.deepEqual((outs as KubeEgressCheckState).refusals, []);
    // The allowance goes in as the provider delivers it; the apiserver holds both policies.
    apply(allowance);
    assert.deepEqual(
      networkPolicies(RESTRICTED).map((p) => [p.name, p.policyTypes]),
      [
        ["allow-dns-egress", ["Egress"]],
        ["default-deny-egress", ["Egress"]],
      ],
    );
  });

  it("an opted-in namespace passes without a policy of its own", async () => {
    const { outs } = await kubeEgressCheckProvider.create!(state([{ name: OPEN, isolate: true }]));
    assert.deepEqual((outs as KubeEgressCheckState).refusals, []);
  });

  it("on refresh, its own allow-dns-egress does not count once the namespace's restriction is gone", async () => {
    const del = kubectl("-n", RESTRICTED, "delete", "networkpolicy", "default-deny-egress");
    assert.equal(del.status, 0, del.stderr);
    assert.deepEqual(
      networkPolicies(RESTRICTED).map((p) => p.name),
      ["allow-dns-egress"],
    );
    const read = await kubeEgressCheckProvider.read!(
      "lab/dns-egress-check",
      state([{ name: RESTRICTED, isolate: false }]),
    );
    const refusals = (read.props as KubeEgressCheckState).refusals;
    assert.equal(refusals.length, 1, JSON.stringify(refusals));
    assert.match(refusals[0], /cut pod\(s\) web-restricted off/);
  });

  describe("a namespace whose own policy covers its Deployment but not its CronJob's pods", () => {
    const CRON = "dnscheck-cron";
    /** A pod template's YAML, each line indented by `indent` spaces. */
    const template = (app: string, restartPolicy: string, indent: number) =>
      [
        "metadata:",
        "  labels:",
        `    app: ${app}`,
        "spec:",
        `  restartPolicy: ${restartPolicy}`,
        "  containers:",
        "  - name: main",
        `    image: registry.invalid/${app}:1`,
      ]
        .map((line) => `${" ".repeat(indent)}${line}\n`)
        .join("");
    /** RKE2's kubectl in a data-dir of its own, for egress-facts.sh: the toolchain's real kubectl. */
    const dataDir = path.join(LAB_DIR, "dnscheck-data-dir");
    const factsScript = () => {
      fs.mkdirSync(path.join(dataDir, "bin"), { recursive: true });
      const found = run("bash", ["-c", "command -v kubectl"]);
      fs.rmSync(path.join(dataDir, "bin", "kubectl"), { force: true });
      fs.symlinkSync(found.stdout.trim(), path.join(dataDir, "bin", "kubectl"));
      const script = componentFile(
        path.join(__dirname, "../../components/cluster-dns"),
        "egress-facts.sh",
      );
      return run("env", [
        `KUBECONFIG=${KUBECONFIG}`,
        `NAMESPACES=${CRON}`,
        `RKE2_FACTS_SCRIPT=echo data_dir=${dataDir}`,
        "bash",
        "-c",
        script,
      ]);
    };

    before(() => {
      namespaceWithPod(CRON, "web");
      apply(
        [
          `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: ${CRON}\n` +
            `spec:\n  selector:\n    matchLabels:\n      app: web\n  template:\n` +
            template("web", "Always", 4),
          `apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: report\n  namespace: ${CRON}\n` +
            `spec:\n  schedule: "0 3 * * *"\n  jobTemplate:\n    spec:\n      template:\n` +
            template("report", "Never", 8),
          `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: web-egress\n` +
            `  namespace: ${CRON}\nspec:\n  podSelector:\n    matchLabels:\n      app: web\n  policyTypes: [Egress]\n`,
        ].join("---\n"),
      );
    });

    after(() => {
      kubectl("delete", "namespace", CRON, "--wait=false");
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("through the API: refuses it, naming the CronJob whose next pod would be cut off", async () => {
      await assert.rejects(
        kubeEgressCheckProvider.create!(state([{ name: CRON, isolate: false }])),
        (err: Error) => {
          assert.match(err.message, /\(web-egress\) do not select every pod or pod template/);
          assert.match(err.message, /cut the pods of CronJob\/report off from everything but DNS/);
          assert.doesNotMatch(err.message, /pod\(s\) web|Deployment\/web/);
          return true;
        },
      );
    });

    it("through egress-facts.sh with the real kubectl: the same refusal from its List of workloads", () => {
      const r = factsScript();
      assert.equal(r.status, 0, r.stderr);
      const facts = factsFromScript(r.stdout, [{ name: CRON, isolate: false }]);
      assert.deepEqual(
        facts[0].workloads.map((w) => [w.kind, w.name, w.templateLabels.app]),
        [
          ["Deployment", "web", "web"],
          ["CronJob", "report", "report"],
        ],
      );
      assert.deepEqual(
        refusalsOf(facts, [{ name: CRON, isolate: false }], "x").map((m) =>
          /CronJob\/report/.test(m),
        ),
        [true],
      );
    });

    it("lets the allowance in once the namespace's policies select the CronJob's template too", async () => {
      apply(
        `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: report-egress\n` +
          `  namespace: ${CRON}\nspec:\n  podSelector:\n    matchLabels:\n      app: report\n  policyTypes: [Egress]\n`,
      );
      const { outs } = await kubeEgressCheckProvider.create!(
        state([{ name: CRON, isolate: false }]),
      );
      assert.deepEqual((outs as KubeEgressCheckState).refusals, []);
      assert.deepEqual(
        refusalsOf(
          factsFromScript(factsScript().stdout, [{ name: CRON, isolate: false }]),
          [{ name: CRON, isolate: false }],
          "x",
        ),
        [],
      );
    });
  });

  it("refuses a namespace the cluster does not have", async () => {
    await assert.rejects(
      kubeEgressCheckProvider.create!(state([{ name: "dnscheck-missing", isolate: true }])),
      /namespace dnscheck-missing does not exist on cluster lab/,
    );
  });

  describe("over SSH on a server where RKE2 has not started", () => {
    const ssh = (namespaces: { name: string; isolate: boolean }[]): SshEgressCheckState => {
      const { privateKey: _key, ...connection } = nodeConnection(20);
      return {
        node: "sza122020.local",
        connection,
        ...stepKey(),
        script: componentFile(
          path.join(__dirname, "../../components/cluster-dns"),
          "egress-facts.sh",
        ),
        namespaces,
        refusals: [],
      };
    };

    it("refuses default as an allowance: a cluster that has not started restricts nothing", async () => {
      await assert.rejects(
        sshEgressCheckProvider.create!(ssh([{ name: "default", isolate: false }])),
        /namespace default on the cluster of sza122020\.local: no NetworkPolicy there restricts egress, .*every pod started there/,
      );
    });

    it("passes default opted in to isolation", async () => {
      const { outs } = await sshEgressCheckProvider.create!(
        ssh([{ name: "default", isolate: true }]),
      );
      assert.deepEqual((outs as SshEgressCheckState).refusals, []);
    });
  });
});
