import * as assert from "assert/strict";
import {
  clusterProgress,
  diagnoseClusterAgent,
  parseAgentCheck,
} from "../../components/rancher-cluster/cluster-wait";
import { parseHostRegistration } from "../../components/rancher-cluster/provider";

const SANE = "waiting for at least one control plane, etcd, and worker node to be registered";
const AGENT = "waiting for cluster agent to connect";

describe("Rancher cluster wait", () => {
  describe("progress from GET /v3/clusters/<id>", () => {
    it("waits, with the planner's message, while Rancher waits for the first group", () => {
      const p = clusterProgress({
        state: "provisioning",
        conditions: [
          { type: "Ready", status: "True" },
          { type: "Updated", status: "Unknown", message: SANE },
        ],
      });
      assert.equal(p.done, false);
      assert.equal(p.message, `Updated: ${SANE}`);
    });

    it("prefers the Updated condition's message, and is not done while Ready is False", () => {
      const p = clusterProgress({
        state: "active",
        conditions: [
          { type: "Provisioned", status: "False", message: "other" },
          { type: "Ready", status: "False", message: AGENT },
        ],
      });
      assert.equal(p.done, false);
      assert.equal(p.message, `Ready: ${AGENT}`);
    });

    it("is done when active with Updated and Ready True", () => {
      const p = clusterProgress({
        state: "active",
        conditions: [
          { type: "Updated", status: "True" },
          { type: "Ready", status: "True" },
        ],
      });
      assert.deepEqual(p, { done: true, state: "active", message: "" });
    });

    it("reads an answer without conditions as not done unless active", () => {
      assert.equal(clusterProgress({}).done, false);
      assert.equal(clusterProgress("nonsense").state, "unknown");
    });
  });

  describe("diagnosis of the cluster agent (seed 000)", () => {
    const context = {
      node: "sza122031.local",
      rancherHost: "ai-ear.cn",
      searchDomains: "cattle-system.svc.cluster.local svc.cluster.local cluster.local local",
    };
    const seed000 = [
      'agent-log: 2026-11-30T01:02:03Z stderr F level=error msg="Failed to connect to proxy" error="dial tcp: lookup ai-ear.cn on 10.43.0.10:53: read udp 10.42.0.5:43210->10.43.0.10:53: i/o timeout"',
      "lookup=timeout 20.0",
    ].join("\n");

    it("names seed 000's cause from the agent's failed lookup and the pod-like lookup", () => {
      const d = diagnoseClusterAgent(parseAgentCheck(seed000, "n31"), context);
      assert.match(d, /^seed 000: the cluster agent cannot resolve Rancher's host ai-ear\.cn/);
      assert.match(d, /lookup ai-ear\.cn on 10\.43\.0\.10:53.*i\/o timeout/);
      assert.match(d, /timed out after 20\.0 s/);
      assert.match(d, /dns\.staticHosts/);
    });

    it("names it from a failed pod-like lookup alone", () => {
      const d = diagnoseClusterAgent(
        parseAgentCheck("agent-log-missing\nlookup=failed 0.1", "n31"),
        context,
      );
      assert.match(d, /^seed 000: .* failed after 0\.1 s/);
    });

    it("says what it saw when the agent resolves Rancher", () => {
      const out =
        'agent-log: msg="Connecting to proxy" url=wss://ai-ear.cn\nlookup=ok 0.0 192.168.122.20';
      const d = diagnoseClusterAgent(parseAgentCheck(out, "n31"), context);
      assert.doesNotMatch(d, /seed 000/);
      assert.match(d, /resolves ai-ear\.cn .*answered 192\.168\.122\.20/);
      assert.match(d, /Connecting to proxy/);
    });

    it("refuses a check report without a lookup result, naming the host", () => {
      assert.throws(
        () => parseAgentCheck("agent-log-missing", "node sza122031.local"),
        /node sza122031\.local: .*no lookup result/,
      );
    });
  });

  describe("a node's registration as the host reports it", () => {
    it("reads server, namespace and secret name, never a credential", () => {
      assert.deepEqual(
        parseHostRegistration(
          "registered=yes agent=active server=https://ai-ear.cn namespace=fleet-default secretName=custom-0a1b2c3d-machine-plan\n",
          "node n31",
        ),
        {
          registered: true,
          server: "https://ai-ear.cn",
          namespace: "fleet-default",
          secretName: "custom-0a1b2c3d-machine-plan",
        },
      );
      assert.deepEqual(parseHostRegistration("registered=no agent=inactive", "node n31"), {
        registered: false,
      });
    });

    it("stops with an error naming the host when the report is unreadable", () => {
      assert.throws(
        () => parseHostRegistration("garbage", "node sza122030.local"),
        /node sza122030\.local: .*registered=yes\|no/,
      );
      assert.throws(
        () =>
          parseHostRegistration("registered=yes agent=active server=https://ai-ear.cn", "node n30"),
        /node n30: .*no server, namespace or secretName/,
      );
    });
  });
});
