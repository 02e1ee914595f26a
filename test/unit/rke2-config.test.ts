import * as assert from "assert/strict";
import * as YAML from "yaml";
import { ClusterSettings, serversOf } from "../../infra/config/model";
import {
  renderRke2ServerConfig,
  Rke2ServerConfigInput,
} from "../../components/rke2-cluster/config";
import { labModel } from "./fixtures";

const TOKEN = "K10test-join-token::server:0123456789abcdef";

function parseConfig(input: Rke2ServerConfigInput): Record<string, unknown> {
  const parsed: unknown = YAML.parse(renderRke2ServerConfig(input));
  assert.ok(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed));
  return parsed as Record<string, unknown>;
}

describe("RKE2 server config.yaml", () => {
  const model = labModel();
  const [first, second] = serversOf(model);
  const firstConfig = parseConfig({ cluster: model.management, node: first, token: TOKEN });
  const joinConfig = parseConfig({
    cluster: model.management,
    node: second,
    joinAddress: first.ip,
    token: TOKEN,
  });

  it("starts the first server as a new cluster, without a server: key", () => {
    assert.ok(!("server" in firstConfig), `first server has server: ${String(firstConfig.server)}`);
  });

  it("joins later servers through the first server's supervisor port 9345", () => {
    assert.equal(joinConfig.server, "https://192.168.122.20:9345");
    assert.equal(joinConfig["node-name"], "sza122021.local");
    assert.equal(joinConfig["node-ip"], "192.168.122.21");
  });

  it("carries the join token on every server", () => {
    assert.equal(firstConfig.token, TOKEN);
    assert.equal(joinConfig.token, TOKEN);
  });

  it("lists every server address in tls-san", () => {
    assert.deepEqual(joinConfig["tls-san"], ["192.168.122.20", "192.168.122.21", "192.168.122.22"]);
  });

  it("sets the stack's pod and service networks and the kube-dns address", () => {
    assert.equal(joinConfig["cluster-cidr"], "10.12.0.0/16");
    assert.equal(joinConfig["service-cidr"], "10.13.0.0/16");
    assert.equal(joinConfig["cluster-dns"], "10.13.0.10");
    assert.equal(joinConfig["cluster-domain"], "cluster.local");
    assert.equal(joinConfig.cni, "calico");
  });

  it("runs kube-proxy in IPVS mode when the stack asks for it", () => {
    assert.deepEqual(joinConfig["kube-proxy-arg"], ["proxy-mode=ipvs"]);
  });

  it("leaves kube-proxy at its default in iptables mode", () => {
    const cluster: ClusterSettings = { ...model.management, kubeProxyMode: "iptables" };
    const config = parseConfig({ cluster, node: first, token: TOKEN });
    assert.ok(!("kube-proxy-arg" in config));
  });

  it("pulls system images from the private registry", () => {
    assert.equal(joinConfig["system-default-registry"], "192.168.122.156:30000");
  });

  it("omits system-default-registry when no private registry is set", () => {
    const cluster: ClusterSettings = { ...model.management, privateRegistry: undefined };
    const config = parseConfig({ cluster, node: first, token: TOKEN });
    assert.ok(!("system-default-registry" in config));
  });

  it("schedules etcd snapshots and keeps the configured number", () => {
    assert.equal(joinConfig["etcd-snapshot-schedule-cron"], "0 */6 * * *");
    assert.equal(joinConfig["etcd-snapshot-retention"], 5);
  });

  it("widens the NodePort range as the stack says", () => {
    assert.equal(joinConfig["service-node-port-range"], "30000-60000");
  });

  it("passes kubelet args such as cluster-dns when given", () => {
    const config = parseConfig({
      cluster: model.management,
      node: first,
      token: TOKEN,
      kubeletArgs: ["cluster-dns=169.254.20.10"],
    });
    assert.deepEqual(config["kubelet-arg"], ["cluster-dns=169.254.20.10"]);
  });

  it("writes no kubelet-arg when there are none", () => {
    assert.ok(!("kubelet-arg" in firstConfig));
    const config = parseConfig({
      cluster: model.management,
      node: first,
      token: TOKEN,
      kubeletArgs: [],
    });
    assert.ok(!("kubelet-arg" in config));
  });

  it("keeps a token with YAML-special characters intact", () => {
    const token = "K10abc::server:#not-a-comment: 'x' \"y\"";
    assert.equal(parseConfig({ cluster: model.management, node: first, token }).token, token);
  });
});
