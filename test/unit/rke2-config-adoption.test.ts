import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { ABSENT, planConfig, sha256 } from "../../components/rke2-cluster/config-adoption";
import { renderRke2ServerConfig } from "../../components/rke2-cluster/config";
import { estateModel } from "../support/lab-stack";

/** The estates as people wrote them (test/lab/estates, copied from the incident's servers). */
const ESTATES = path.join(__dirname, "..", "..", "..", "test", "lab", "estates", "seed-003");
/** The release the estate runs: RKE2's defaults are this release line's. */
const RELEASE = "v1.35.6+rke2r1";
const TOKEN = "K10" + "ab".repeat(32) + "::server:lab-cluster-password";

function handWritten(variant: string, host: string): string {
  return fs
    .readFileSync(path.join(ESTATES, variant, host, "config.yaml"), "utf8")
    .replace("<cluster token>", TOKEN);
}

/** What the stack renders for the lab's server `index` (no kubelet args: NodeLocalDNS aside). */
function rendered(index: number, token = TOKEN): string {
  const model = estateModel();
  const servers = model.nodes.filter((n) => n.cluster === "management");
  return renderRke2ServerConfig({
    cluster: model.management,
    node: servers[index],
    joinAddress: index === 0 ? undefined : servers[0].ip,
    token,
  });
}

const serverToken = (token: string) => ({
  sha256: sha256(token),
  passwordSha256: sha256(token.replace(/^.*::[^:]*:/, "")),
});

describe("config.yaml of a hand-built server is adopted, not replaced", () => {
  it("finds nothing to change on seed 003's joining server, and leaves the file byte for byte", () => {
    const text = handWritten("as-found", "sza122021.local");
    const plan = planConfig(
      rendered(1),
      { text, hostName: "sza122021.local", release: RELEASE },
      "sza122021.local",
    );
    assert.deepEqual(plan.changedKeys, []);
    assert.equal(plan.text, text);
    // Absent keys count as RKE2's defaults: node-name is the host name, cluster-dns the 10th
    // address of the service CIDR, cluster-domain cluster.local.
    assert.equal(plan.found["node-name"], "sza122021.local");
    assert.equal(plan.found["cluster-dns"], "10.13.0.10");
  });

  it("takes the first server's token from its server/token when config.yaml has none", () => {
    const text = handWritten("as-found", "sza122020.local");
    const plan = planConfig(
      rendered(0),
      { text, hostName: "sza122020.local", release: RELEASE, serverToken: serverToken(TOKEN) },
      "sza122020.local",
    );
    assert.deepEqual(plan.changedKeys, []);
  });

  it("accepts the password part of the cluster's token as the stack's rke2Token", () => {
    const plan = planConfig(
      rendered(0, "lab-cluster-password"),
      {
        text: handWritten("as-found", "sza122020.local"),
        hostName: "sza122020.local",
        release: RELEASE,
        serverToken: serverToken(TOKEN),
      },
      "sza122020.local",
    );
    assert.deepEqual(plan.changedKeys, []);
  });

  it("refuses a stack token that is not the running cluster's, without showing either", () => {
    const other = "K10" + "cd".repeat(32) + "::server:another-password";
    for (const found of [
      {
        text: handWritten("as-found", "sza122021.local"),
        hostName: "sza122021.local",
        release: RELEASE,
      },
      {
        text: handWritten("as-found", "sza122020.local"),
        hostName: "sza122020.local",
        release: RELEASE,
        serverToken: serverToken(TOKEN),
      },
    ]) {
      assert.throws(
        () => planConfig(rendered(1, other), found, "sza122021.local"),
        (err: Error) =>
          /sza122021\.local: .* is not the stack's rke2Token\. Nothing was changed\. .*server\/token.*pulumi config set --secret rke2Token/.test(
            err.message,
          ) &&
          !err.message.includes("password") &&
          !err.message.includes(TOKEN),
      );
    }
  });

  it("keeps every key the model does not manage, with its value", () => {
    const text = handWritten("with-extras", "sza122022.local");
    const stack = YAML.parse(rendered(2)) as Record<string, unknown>;
    stack["etcd-snapshot-retention"] = 7;
    const plan = planConfig(
      YAML.stringify(stack),
      { text, hostName: "sza122022.local", release: RELEASE },
      "sza122022.local",
    );
    assert.deepEqual(plan.changedKeys, ["etcd-snapshot-retention"]);
    const before = YAML.parse(text) as Record<string, unknown>;
    const after = YAML.parse(plan.text) as Record<string, unknown>;
    for (const key of [
      "selinux",
      "write-kubeconfig-mode",
      "node-taint",
      "disable",
      "kube-apiserver-arg",
      "etcd-expose-metrics",
    ])
      assert.deepEqual(after[key], before[key], key);
    assert.deepEqual(after, { ...before, "etcd-snapshot-retention": 7 });
    assert.match(plan.text, /# added by the operators after the incident/);
    assert.deepEqual(
      [plan.found["etcd-snapshot-retention"], plan.desired["etcd-snapshot-retention"]],
      ["5", "7"],
    );
  });

  it("names a managed key the file lacks whose default is not the stack's value", () => {
    const stack = YAML.parse(rendered(1)) as Record<string, unknown>;
    stack["kubelet-arg"] = ["cluster-dns=169.254.20.10"];
    const plan = planConfig(
      YAML.stringify(stack),
      {
        text: handWritten("as-found", "sza122021.local"),
        hostName: "sza122021.local",
        release: RELEASE,
      },
      "sza122021.local",
    );
    assert.deepEqual(plan.changedKeys, ["kubelet-arg"]);
    assert.equal(plan.found["kubelet-arg"], ABSENT);
  });

  it("manages argument lists per flag: the file's other flags stay", () => {
    const stack = YAML.parse(rendered(1)) as Record<string, unknown>;
    stack["kubelet-arg"] = ["cluster-dns=169.254.20.10"];
    const text = `${handWritten("as-found", "sza122021.local")}kubelet-arg: ["max-pods=250", "cluster-dns=10.13.0.10"]\n`;
    const plan = planConfig(
      YAML.stringify(stack),
      { text, hostName: "sza122021.local", release: RELEASE },
      "sza122021.local",
    );
    assert.deepEqual(plan.changedKeys, ["kubelet-arg"]);
    assert.deepEqual(
      [plan.found["kubelet-arg"], plan.desired["kubelet-arg"]],
      ["cluster-dns=10.13.0.10", "cluster-dns=169.254.20.10"],
    );
    const written = YAML.parse(plan.text) as Record<string, unknown>;
    assert.deepEqual(written["kubelet-arg"], ["max-pods=250", "cluster-dns=169.254.20.10"]);
    // Once written, the same stack finds nothing to change.
    const again = planConfig(
      YAML.stringify(stack),
      { text: plan.text, hostName: "sza122021.local", release: RELEASE },
      "sza122021.local",
    );
    assert.deepEqual(again.changedKeys, []);
  });

  it("reads the node name RKE2 uses: the file's node-name, else the host name lowercased", () => {
    const text = handWritten("short-names", "sza122021");
    assert.equal(
      planConfig(rendered(1), { text, hostName: "SZA122021", release: RELEASE }, "sza122021.local")
        .hostNodeName,
      "sza122021",
    );
    const named = `node-name: custom-21\n${text}`;
    assert.equal(
      planConfig(
        rendered(1),
        { text: named, hostName: "sza122021", release: RELEASE },
        "sza122021.local",
      ).hostNodeName,
      "custom-21",
    );
  });

  it("writes the whole rendered file on a host that has none", () => {
    const plan = planConfig(
      rendered(1),
      { hostName: "sza122021.local", release: RELEASE },
      "sza122021.local",
    );
    assert.ok(plan.changedKeys.includes("token") && plan.changedKeys.includes("server"));
    assert.equal(plan.text, rendered(1));
  });

  it("honours a custom data-dir and refuses one that is not a path", () => {
    const text = `data-dir: /data/rke2\n${handWritten("as-found", "sza122021.local")}`;
    assert.equal(
      planConfig(
        rendered(1),
        { text, hostName: "sza122021.local", release: RELEASE },
        "sza122021.local",
      ).dataDir,
      "/data/rke2",
    );
    assert.throws(
      () =>
        planConfig(
          rendered(1),
          { text: "data-dir: [a]\n", hostName: "h", release: RELEASE },
          "sza122021.local",
        ),
      /data-dir in \/etc\/rancher\/rke2\/config\.yaml on sza122021\.local is not an absolute path/,
    );
  });

  it("refuses a file that does not parse, naming the line but never quoting it", () => {
    const text = `token: ${TOKEN}\ncni: [calico\n`;
    assert.throws(
      () => planConfig(rendered(1), { text, hostName: "h", release: RELEASE }, "sza122021.local"),
      (err: Error) =>
        /cannot parse \/etc\/rancher\/rke2\/config\.yaml on sza122021\.local \(line \d\)/.test(
          err.message,
        ) && !err.message.includes(TOKEN),
    );
  });
});

describe("state carries nothing derived from the token", () => {
  it("leaves the token out of the found and desired keys", () => {
    const plan = planConfig(
      rendered(1, "weak"),
      {
        text: handWritten("as-found", "sza122021.local").replace(TOKEN, "weak"),
        hostName: "sza122021.local",
        release: RELEASE,
      },
      "sza122021.local",
    );
    const plain = JSON.stringify([
      plan.found,
      plan.desired,
      plan.changedKeys,
      plan.hostNodeName,
      plan.dataDir,
    ]);
    assert.ok(!plain.includes("weak"));
    assert.ok(!plain.includes(sha256("weak")));
    assert.ok(!("token" in plan.found) && !("token" in plan.desired));
  });
});
