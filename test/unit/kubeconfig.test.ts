/**
 * The management cluster's kubeconfig as the stack output gives it: RKE2's file with its
 * loopback server replaced, nothing else changed, and errors that name the server, never the
 * file's content.
 */
import * as assert from "assert/strict";
import * as YAML from "yaml";
import { externalKubeconfig } from "../../components/rke2-cluster/kubeconfig";

/** A kubeconfig of the shape RKE2 writes (k3s-io/k3s pkg/clientaccess WriteClientKubeConfig). */
function rke2Kubeconfig(server: string): string {
  return [
    "apiVersion: v1",
    "clusters:",
    "- cluster:",
    "    certificate-authority-data: Q0EtREFUQQ==",
    `    server: ${server}`,
    "  name: default",
    "contexts:",
    "- context:",
    "    cluster: default",
    "    user: default",
    "  name: default",
    "current-context: default",
    "kind: Config",
    "preferences: {}",
    "users:",
    "- name: default",
    "  user:",
    "    client-certificate-data: Q0VSVA==",
    "    client-key-data: U0VDUkVULUtFWQ==",
    "",
  ].join("\n");
}

describe("the management cluster's kubeconfig", () => {
  it("points the loopback server at the registration address, keeping the port and every other line", () => {
    const found = rke2Kubeconfig("https://127.0.0.1:6443");
    const out = externalKubeconfig(found, "192.168.122.20", "sza122020.local");
    assert.equal(YAML.parse(out).clusters[0].cluster.server, "https://192.168.122.20:6443");
    const changed = out.split("\n").filter((l, i) => l !== found.split("\n")[i]);
    assert.deepEqual(changed, ["    server: https://192.168.122.20:6443"]);
    const other = externalKubeconfig(
      rke2Kubeconfig("https://localhost:7443"),
      "rke2.ai-ear.cn",
      "n",
    );
    assert.equal(YAML.parse(other).clusters[0].cluster.server, "https://rke2.ai-ear.cn:7443");
  });

  it("keeps a server that is not a loopback address (RKE2 with bind-address writes that address)", () => {
    const found = rke2Kubeconfig("https://10.0.0.5:6443");
    assert.equal(externalKubeconfig(found, "192.168.122.20", "n"), found);
  });

  it("refuses a file that is not a kubeconfig, naming the server and not quoting the file", () => {
    for (const text of [
      "{}",
      "clusters: []",
      "clusters: [{cluster: {server: 'not a url'}}]",
      ": :",
    ]) {
      assert.throws(
        () =>
          externalKubeconfig(
            `${text}\n# client-key-data: U0VDUkVULUtFWQ==`,
            "h",
            "sza122020.local",
          ),
        (err: Error) =>
          err.message.startsWith("kubeconfig of sza122020.local: ") &&
          !err.message.includes("U0VDUkVULUtFWQ") &&
          /restart it there, then re-run/.test(err.message),
        text,
      );
    }
  });
});

describe("the management cluster's kubeconfig, in another layout", () => {
  it("still points a loopback server given in flow style at the address", () => {
    const flow =
      "apiVersion: v1\nkind: Config\nclusters: [{name: default, cluster: {server: 'https://127.0.0.1:6443'}}]\n";
    const out = externalKubeconfig(flow, "192.168.122.20", "n");
    assert.equal(YAML.parse(out).clusters[0].cluster.server, "https://192.168.122.20:6443");
  });
});
