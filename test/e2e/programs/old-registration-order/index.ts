/**
 * The registration order this product used before Rancher's planner was read: the etcd +
 * controlplane node alone, a ClusterSync, then the worker. Rancher plans no node until a worker
 * is registered too (rancher/rancher@v2.14.3 pkg/capr/planner/planner.go, clusterIsSane), so that
 * sync never ends. The e2e tier previews this program with the policy pack and expects it refused.
 * It uses the product's own registration provider and the resource shapes the program registers.
 */
import * as pulumi from "@pulumi/pulumi";
import * as rancher2 from "@pulumi/rancher2";
import { nodeRegistrationProvider } from "../../../../components/rancher-cluster/provider";

class NodeRegistration extends pulumi.dynamic.Resource {
  constructor(name: string, props: pulumi.Inputs, opts: pulumi.CustomResourceOptions) {
    super(nodeRegistrationProvider, name, props, opts, "rancher", "NodeRegistration");
  }
}

const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBz4bqQfmKQv7bmw7ZmZ4qEoPSFv7zxNQ2w2cj2f3Hh3";
const provider = new rancher2.Provider("rancher", {
  apiUrl: "https://ai-ear.cn",
  tokenKey: pulumi.secret("token-preview:not-a-real-token"),
});
const cluster = new rancher2.ClusterV2(
  "uat1",
  { name: "uat1", kubernetesVersion: "v1.35.7+rke2r1" },
  { provider },
);

function register(node: string, octet: number, roles: string[], after: pulumi.Resource[]) {
  const ip = `192.168.122.${octet}`;
  return new NodeRegistration(
    `register-${node}`,
    {
      node,
      nodeIp: ip,
      cluster: "uat1",
      roles,
      connection: { host: ip, port: 22, user: "root", hostKey: HOST_KEY },
      sshPrivateKey: pulumi.secret("not-a-key"),
      registrationCommand: pulumi.secret(cluster.clusterRegistrationToken.nodeCommand),
      rancherUrl: "https://ai-ear.cn",
      apiToken: pulumi.secret("token-preview:not-a-real-token"),
      insecure: false,
      rancherHost: "ai-ear.cn",
      script: "register-node.sh",
      timeoutSeconds: 900,
      pollSeconds: 10,
    },
    { dependsOn: [cluster, ...after] },
  );
}

const first = register("sza122031.local", 31, ["etcd", "controlplane"], []);
const sync = new rancher2.ClusterSync(
  "sync-sza122031.local",
  { clusterId: cluster.clusterV1Id, stateConfirm: 2 },
  { provider, dependsOn: [first] },
);
register("sza122030.local", 30, ["worker"], [sync]);
