/**
 * Which files in a server's manifests directory conflict with the DNS fix's own manifest: those
 * RKE2 would apply that define HelmChartConfig kube-system/rke2-coredns (the real tier runs the
 * facts script on a lab server, over SSH).
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import {
  conflictIn,
  manifestConflictFailure,
  manifestConflicts,
} from "../../components/cluster-dns/manifest-conflicts";
import { manifestCheckProvider } from "../../components/cluster-dns/manifest-check-provider";

/** An operator's own HelmChartConfig rke2-coredns, as written by hand. */
const CONFIG = fs.readFileSync(
  path.join(__dirname, "..", "..", "..", "test", "fixtures", "operator-rke2-coredns.yaml"),
  "utf8",
);

const report = (files: Record<string, string>) =>
  [
    "dir /var/lib/rancher/rke2/server/manifests",
    ...Object.entries(files).map(
      ([path, text]) => `file ${path} ${Buffer.from(text).toString("base64")}`,
    ),
  ].join("\n");

describe("DNS manifest conflicts", () => {
  it("finds an operator's HelmChartConfig rke2-coredns in kube-system", () => {
    assert.equal(conflictIn(CONFIG), "defines HelmChartConfig rke2-coredns in kube-system");
  });

  it("finds it as a later document of a file, in a List, in JSON, and with no namespace", () => {
    const ingress = CONFIG.replace("rke2-coredns", "rke2-ingress-nginx");
    assert.ok(conflictIn(`${ingress}---\n${CONFIG}`));
    const list = {
      apiVersion: "v1",
      kind: "List",
      items: [
        {
          apiVersion: "helm.cattle.io/v1",
          kind: "HelmChartConfig",
          metadata: { name: "rke2-coredns", namespace: "kube-system" },
        },
      ],
    };
    assert.ok(conflictIn(JSON.stringify(list)));
    assert.ok(conflictIn(JSON.stringify(list.items[0], null, 2)));
    assert.equal(
      conflictIn(CONFIG.replace("  namespace: kube-system\n", "")),
      "defines HelmChartConfig rke2-coredns with no namespace",
    );
  });

  it("leaves files that only mention the names: another object, another kind, another namespace", () => {
    const ingress = `# tuned like rke2-coredns\n${CONFIG.replace("name: rke2-coredns", "name: rke2-ingress-nginx")}`;
    assert.equal(conflictIn(ingress), undefined);
    // RKE2's own packaged component is a HelmChart, not a HelmChartConfig.
    const chart = `# see the HelmChartConfig docs\n${CONFIG.replace("kind: HelmChartConfig", "kind: HelmChart")}`;
    assert.equal(conflictIn(chart), undefined);
    assert.equal(conflictIn(CONFIG.replace("namespace: kube-system", "namespace: dns")), undefined);
  });

  it("counts a file it cannot parse, since what it defines cannot be told", () => {
    const why = conflictIn(`${CONFIG}  bad: [\n`);
    assert.match(why ?? "", /^cannot be parsed \(/);
  });

  it("reads the facts script's report and names each conflicting file", () => {
    const found = manifestConflicts(
      report({
        "/var/lib/rancher/rke2/server/manifests/ops/rke2-coredns-config.yaml": CONFIG,
        "/var/lib/rancher/rke2/server/manifests/notes.yaml": "# HelmChartConfig rke2-coredns\n",
      }),
    );
    assert.deepEqual(found, [
      "/var/lib/rancher/rke2/server/manifests/ops/rke2-coredns-config.yaml defines HelmChartConfig rke2-coredns in kube-system",
    ]);
    assert.deepEqual(manifestConflicts(report({})), []);
  });

  it("stops naming the server, each file and both ways out", () => {
    const message = manifestConflictFailure({ node: "sza122020.local" }, [
      "/m/ops/rke2-coredns-config.yaml defines HelmChartConfig rke2-coredns in kube-system",
    ]);
    assert.match(message, /on server sza122020\.local/);
    assert.match(message, /\/m\/ops\/rke2-coredns-config\.yaml defines/);
    assert.match(message, /`<file>\.skip`/);
    assert.match(message, /rke2\.dnsDelivery: helmChartConfig/);
  });

  it("checks again on the next run while a conflict is recorded", async () => {
    const state = {
      node: "sza122020.local",
      connection: { host: "192.0.2.1", port: 22, user: "root", hostKey: "" },
      sshKeyFingerprint: "",
      script: "",
      own: "",
      rke2FactsScript: "",
      conflicts: ["/m/a.yaml defines HelmChartConfig rke2-coredns in kube-system"],
    };
    assert.equal((await manifestCheckProvider.diff!("id", state, state)).changes, true);
    assert.equal(
      (await manifestCheckProvider.diff!("id", { ...state, conflicts: [] }, state)).changes,
      false,
    );
  });
});
