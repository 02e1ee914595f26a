import * as assert from "assert/strict";
import * as YAML from "yaml";
import { ClusterSettings, serversOf } from "../../components/model";
import {
  registrationAddressMissingFromTlsSan,
  registrationAddressOf,
  renderRke2AgentConfig,
  renderRke2ServerConfig,
  Rke2AgentConfigInput,
  Rke2ServerConfigInput,
} from "../../components/rke2-cluster/config";
import { estateModel } from "../support/lab-stack";

const TOKEN = "K10test-join-token::server:0123456789abcdef";

function parseYaml(text: string): Record<string, unknown> {
  const parsed: unknown = YAML.parse(text);
  assert.ok(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed));
  return parsed as Record<string, unknown>;
}

function parseConfig(input: Rke2ServerConfigInput): Record<string, unknown> {
  return parseYaml(renderRke2ServerConfig(input));
}

function parseAgentConfig(input: Rke2AgentConfigInput): Record<string, unknown> {
  return parseYaml(renderRke2AgentConfig(input));
}

describe("RKE2 server config.yaml", () => {
  const model = estateModel();
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

  it("writes the stack's tls-san as it is", () => {
    assert.deepEqual(joinConfig["tls-san"], ["192.168.122.20", "192.168.122.21", "192.168.122.22"]);
  });

  it("writes no tls-san when the stack lists none", () => {
    const cluster: ClusterSettings = { ...model.management, tlsSan: [] };
    assert.ok(!("tls-san" in parseConfig({ cluster, node: first, token: TOKEN })));
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

  it("folds `name+` pass-through settings into the one key, as RKE2 appends them", () => {
    const config = parseConfig({
      cluster: {
        ...model.management,
        extraConfig: { "node-label": ["a=1"] },
        serverConfig: { "node-label+": ["b=2"], "kube-apiserver-arg+": ["audit-log-maxage=30"] },
      },
      node: { ...first, extraConfig: { "kubelet-arg+": ["max-pods=250"] } },
      token: TOKEN,
      kubeletArgs: ["cluster-dns=169.254.20.10"],
    });
    assert.deepEqual(config["node-label"], ["a=1", "b=2"]);
    assert.deepEqual(config["kube-apiserver-arg"], ["audit-log-maxage=30"]);
    assert.deepEqual(config["kubelet-arg"], ["cluster-dns=169.254.20.10", "max-pods=250"]);
    assert.ok(Object.keys(config).every((k) => !k.endsWith("+")));
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

describe("RKE2 registration address", () => {
  const model = estateModel();
  const [first] = serversOf(model);

  it("is the first server's address when the stack sets no registration address", () => {
    assert.equal(registrationAddressOf(model.management, first), "192.168.122.20");
  });

  it("is the stack's registration address when it sets one", () => {
    const cluster: ClusterSettings = { ...model.management, registrationAddress: "rke2.ai-ear.cn" };
    assert.equal(registrationAddressOf(cluster, first), "rke2.ai-ear.cn");
  });

  it("needs no tls-san entry for the first server's own address", () => {
    const cluster: ClusterSettings = { ...model.management, tlsSan: [] };
    assert.equal(registrationAddressMissingFromTlsSan(cluster), undefined);
  });

  it("names a registration address that tls-san does not list", () => {
    const cluster: ClusterSettings = {
      ...model.management,
      registrationAddress: "192.168.122.100",
    };
    assert.equal(registrationAddressMissingFromTlsSan(cluster), "192.168.122.100");
  });

  it("accepts a registration address listed in tls-san in another letter case", () => {
    const cluster: ClusterSettings = {
      ...model.management,
      registrationAddress: "rke2.ai-ear.cn",
      tlsSan: ["RKE2.ai-ear.cn"],
    };
    assert.equal(registrationAddressMissingFromTlsSan(cluster), undefined);
  });
});

describe("RKE2 agent config.yaml", () => {
  const model = estateModel();
  const agent = { ...serversOf(model)[0], name: "sza122025.local", ip: "192.168.122.25" };
  const agentConfig = parseAgentConfig({
    cluster: model.management,
    node: agent,
    serverAddress: "192.168.122.20",
    token: TOKEN,
  });

  it("registers through the given address's supervisor port 9345 with the token", () => {
    assert.equal(agentConfig.server, "https://192.168.122.20:9345");
    assert.equal(agentConfig.token, TOKEN);
    assert.equal(agentConfig["node-name"], "sza122025.local");
    assert.equal(agentConfig["node-ip"], "192.168.122.25");
  });

  it("runs the agent's kube-proxy in IPVS mode when the stack asks for it", () => {
    assert.deepEqual(agentConfig["kube-proxy-arg"], ["proxy-mode=ipvs"]);
  });

  it("leaves the agent's kube-proxy at its default in iptables mode", () => {
    const cluster: ClusterSettings = { ...model.management, kubeProxyMode: "iptables" };
    const config = parseAgentConfig({ cluster, node: agent, serverAddress: "x", token: TOKEN });
    assert.ok(!("kube-proxy-arg" in config));
  });

  it("writes no system-default-registry on an agent, even with a private registry", () => {
    assert.equal(model.management.privateRegistry, "192.168.122.156:30000");
    assert.ok(!("system-default-registry" in agentConfig));
  });

  it("passes kubelet args such as cluster-dns when given", () => {
    const config = parseAgentConfig({
      cluster: model.management,
      node: agent,
      serverAddress: "192.168.122.20",
      token: TOKEN,
      kubeletArgs: ["cluster-dns=169.254.20.10"],
    });
    assert.deepEqual(config["kubelet-arg"], ["cluster-dns=169.254.20.10"]);
  });
});
