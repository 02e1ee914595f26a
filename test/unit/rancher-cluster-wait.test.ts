import * as assert from "assert/strict";
import { createHash } from "crypto";
import { gzipSync } from "zlib";
import {
  clusterProgress,
  ClusterWaitIo,
  diagnoseClusterAgent,
  diagnoseWhereAgentRuns,
  parseAgentCheck,
  waitForCluster,
} from "../../components/rancher-cluster/cluster-wait";
import { machineProgress } from "../../components/rancher-cluster/machine-progress";
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

    it("without an Updated condition, reports Ready's message and is not done while Ready is False", () => {
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

  describe("the wait loop", () => {
    const state = {
      cluster: "uat1",
      after: "sza122031.local",
      apiToken: "token-abc:very-secret",
      timeoutSeconds: 60,
      pollSeconds: 5,
    };
    /** A simulated Rancher answering `answers` in turn (the last one from then on), on a clock
     * that each sleep moves forward. */
    function simulated(
      answers: unknown[],
      diagnosis = "seed 000: the cluster agent cannot resolve",
      secrets: unknown[] = [],
    ) {
      let clock = 0;
      let calls = 0;
      let secretCalls = 0;
      const log: string[] = [];
      const checks: number[] = [];
      const io: ClusterWaitIo = {
        fetchCluster: async () => {
          const answer = answers[Math.min(calls++, answers.length - 1)];
          if (answer instanceof Error) throw answer;
          return answer;
        },
        fetchPlanSecret: async () => {
          const answer = secrets[Math.min(secretCalls++, secrets.length - 1)];
          if (answer instanceof Error) throw answer;
          return answer;
        },
        checkAgent: async () => {
          checks.push(clock);
          return diagnosis;
        },
        now: () => clock,
        sleep: async (ms) => {
          clock += ms;
        },
        info: (line) => log.push(`info ${line}`),
        warn: (line) => log.push(`warn ${line}`),
      };
      return { io, log, checks };
    }
    const waiting = (message: string) => ({
      state: "provisioning",
      conditions: [{ type: "Updated", status: "Unknown", message }],
    });
    const active = { state: "active", conditions: [{ type: "Updated", status: "True" }] };

    it("logs Rancher's message when it changes and returns once the cluster is active", async () => {
      const sim = simulated([waiting(SANE), waiting(SANE), waiting(AGENT), active]);
      await waitForCluster(state, sim.io);
      assert.deepEqual(sim.log, [
        `info cluster uat1 (after sza122031.local): waiting (0 s of 60 s): provisioning; Updated: ${SANE}`,
        `info cluster uat1 (after sza122031.local): waiting (10 s of 60 s): provisioning; Updated: ${AGENT}`,
        "info cluster uat1 (after sza122031.local): active after 15 s",
      ]);
      assert.deepEqual(sim.checks, []);
    });

    it("checks the cluster agent once it has kept Rancher waiting, and puts the diagnosis in the timeout error", async () => {
      const sim = simulated([waiting(AGENT)]);
      await assert.rejects(waitForCluster(state, sim.io), (err: Error) => {
        assert.match(
          err.message,
          /^cluster uat1 \(after sza122031\.local\) is not active 60 s after its registrations: Rancher says provisioning; Updated: waiting for cluster agent to connect\. seed 000: the cluster agent cannot resolve/,
        );
        return true;
      });
      // Once after half the timeout (30 s), again at the timeout.
      assert.deepEqual(sim.checks, [30000, 60000]);
      assert.ok(sim.log.some((l) => l.startsWith("warn ") && l.includes("seed 000")));
    });

    it("names Rancher's message in the timeout error without checking the agent when Rancher waits for nodes", async () => {
      const sim = simulated([waiting(SANE)]);
      await assert.rejects(
        waitForCluster(state, sim.io),
        new RegExp(`Rancher says provisioning; Updated: ${SANE}\\. The nodes stay registered`),
      );
      assert.deepEqual(sim.checks, []);
    });

    describe("a machine registered into a cluster that reads active", () => {
      const b64 = (text: string) => Buffer.from(text).toString("base64");
      const planText = JSON.stringify({ files: [], probes: { kubelet: {}, calico: {} } });
      const checksum = createHash("sha256").update(planText).digest("hex");
      const secret = (data: Record<string, string>) => ({
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
      });
      const unplanned = secret({});
      const planned = secret({ plan: planText });
      const applied = (probes: Record<string, boolean>) =>
        secret({
          plan: planText,
          "applied-checksum": checksum,
          "probe-statuses": JSON.stringify(
            Object.fromEntries(Object.entries(probes).map(([k, v]) => [k, { healthy: v }])),
          ),
        });
      const followed = {
        ...state,
        after: "workers",
        machines: [
          {
            node: "sza122032.local",
            namespace: "fleet-default",
            secretName: "custom-1-machine-plan",
          },
        ],
      };

      it("waits for the planner's plan, its application and its probes, whatever the cluster says", async () => {
        const sim = simulated([active], "", [
          unplanned,
          planned,
          applied({ kubelet: true, calico: false }),
          applied({ kubelet: true, calico: true }),
        ]);
        await waitForCluster(followed, sim.io);
        assert.deepEqual(sim.log, [
          "info cluster uat1 (after workers): waiting (0 s of 60 s): active; sza122032.local: Rancher's planner has not planned it yet",
          "info cluster uat1 (after workers): waiting (5 s of 60 s): active; sza122032.local: its agent has not applied its plan yet",
          "info cluster uat1 (after workers): waiting (10 s of 60 s): active; sza122032.local: probes not healthy yet: calico",
          "info cluster uat1 (after workers): active with sza122032.local after 15 s",
        ]);
      });

      it("a plan applied under another checksum, or failed, is not done", () => {
        const stale = secret({ plan: planText, "applied-checksum": "0".repeat(64) });
        assert.deepEqual(machineProgress(stale), {
          done: false,
          missing: "its agent has not applied Rancher's latest plan yet",
        });
        const failed = secret({
          plan: planText,
          "failed-checksum": checksum,
          "failure-count": "3",
        });
        assert.match(
          machineProgress(failed).missing,
          /failed to apply the plan \(3 failure\(s\); it retries/,
        );
        // A probe of the plan without a status yet is not healthy.
        const noStatus = secret({ plan: planText, "applied-checksum": checksum });
        assert.equal(machineProgress(noStatus).missing, "probes not healthy yet: calico, kubelet");
        assert.deepEqual(machineProgress(applied({ kubelet: true, calico: true })), {
          done: true,
          missing: "",
        });
      });

      describe("a failed plan", () => {
        /** failed-output as the agent writes it: gzip of a JSON map of instruction name to bytes. */
        const failedOutput = (outputs: Record<string, string>) =>
          gzipSync(
            JSON.stringify(
              Object.fromEntries(
                Object.entries(outputs).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
              ),
            ),
          ).toString("base64");
        const failedPlan = (count: string, max?: string, output?: string) => ({
          data: {
            plan: b64(planText),
            "failed-checksum": b64(checksum),
            "failure-count": b64(count),
            ...(max === undefined ? {} : { "max-failures": b64(max) }),
            ...(output === undefined ? {} : { "failed-output": output }),
          },
        });

        it("that Rancher still retries keeps the wait going, saying so", () => {
          const p = machineProgress(failedPlan("1", "3"));
          assert.equal(p.failed, undefined);
          assert.match(
            p.missing,
            /failed to apply the plan \(1 failure\(s\) of 3 allowed; it retries after 30 s/,
          );
          // Without max-failures Rancher never counts it as failed (plansecret.go).
          assert.equal(machineProgress(failedPlan("4")).failed, undefined);
        });

        it("ends the wait at once when Rancher counts it failed, naming the machine and the instruction's output", async () => {
          const output = failedOutput({
            "install-rke2": "fetching rke2\ncurl: (6) Could not resolve host: registry.invalid\n",
          });
          const sim = simulated([active], "", [failedPlan("3", "3", output)]);
          await assert.rejects(waitForCluster(followed, sim.io), (err: Error) => {
            assert.match(
              err.message,
              /^cluster uat1 \(after workers\): sza122032\.local: its agent failed to apply Rancher's plan 3 time\(s\), the planner's limit \(max-failures 3\): Rancher marks the machine's plan as failed and retries no more \(install-rke2: fetching rke2 \| curl: \(6\) Could not resolve host: registry\.invalid\); see journalctl -u rancher-system-agent/,
            );
            assert.match(err.message, /Found 0 s into the wait/);
            return true;
          });
          // max-failures -1: the first failure is the last (plansecret.go).
          assert.ok(machineProgress(failedPlan("1", "-1")).failed?.includes("allows no failure"));
        });
      });

      it("names the machine in the timeout error and never the API token", async () => {
        const sim = simulated([active], "", [new Error(`401 for ${state.apiToken}`)]);
        await assert.rejects(waitForCluster(followed, sim.io), (err: Error) => {
          assert.match(
            err.message,
            /Rancher says active; sza122032\.local: its plan secret fleet-default\/custom-1-machine-plan could not be read \(401 for \[secret\]\)/,
          );
          return true;
        });
        assert.ok(sim.log.every((l) => !l.includes(state.apiToken)));
      });
    });

    it("keeps waiting through an unreachable Rancher and never logs the API token", async () => {
      const sim = simulated([new Error(`GET failed for ${state.apiToken}`), active]);
      await waitForCluster(state, sim.io);
      assert.match(sim.log[0], /unreachable; GET failed for \[secret\]/);
      assert.ok(sim.log.every((l) => !l.includes(state.apiToken)));
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

    it("keeps the half of the registration token the agent logs out of everything it reads", () => {
      const line =
        'agent-log: 2026-11-30T01:02:03Z stderr F level=info msg="Connecting to wss://ai-ear.cn/v3/connect/register with token starting with 7xk2p9qrm4"';
      const check = parseAgentCheck(`${line}\nlookup=ok 0.1 192.168.122.20`, "n31");
      assert.deepEqual(check.logLines, [
        '2026-11-30T01:02:03Z stderr F level=info msg="Connecting to wss://ai-ear.cn/v3/connect/register with token starting with [secret]"',
      ]);
    });

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

    it("names it when the pod-like lookup answers only after a search domain timed out", () => {
      const out = "agent-log-missing\nlookup=ok 10.0 192.168.122.20 192.168.122.21";
      const d = diagnoseClusterAgent(parseAgentCheck(out, "n31"), context);
      assert.match(
        d,
        /^seed 000: .*answered 192\.168\.122\.20 192\.168\.122\.21 in 10\.0 s, only after a search domain's query went unanswered/,
      );
    });

    it("does not blame DNS when the pod-like lookup could not run", () => {
      const out = "agent-log-missing\nlookup=unavailable 0.0 exit 32: mount: permission denied";
      const d = diagnoseClusterAgent(parseAgentCheck(out, "n31"), context);
      assert.doesNotMatch(d, /seed 000/);
      assert.match(d, /could not run on sza122031\.local \(exit 32: mount: permission denied\)/);
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

  describe("diagnosis on the node that runs the cluster agent", () => {
    const endpoint = (host: string) => ({
      host,
      port: 22,
      user: "root",
      hostKey: "ssh-ed25519 AAAA",
    });
    const state = {
      agentNodes: [
        { node: "cp1", connection: endpoint("10.0.0.1") },
        { node: "w1", connection: endpoint("10.0.0.2") },
      ],
      initNode: "cp1",
      connection: endpoint("10.0.0.1"),
      clusterDomain: "cluster.local",
      rancherHost: "ai-ear.cn",
      apiToken: "token-abc:very-secret",
    };
    const noLog = {
      logLines: [],
      lookup: { result: "skipped", seconds: "0", detail: "" },
    } as const;
    const timeoutLog = {
      logLines: [
        "Failed to dial steve aggregation server: dial tcp: lookup ai-ear.cn: i/o timeout",
      ],
      lookup: { result: "timeout", seconds: "20.0", detail: "" },
    } as const;

    it("reads the agent where its log is, after the nodes without one", async () => {
      const asked: string[] = [];
      const text = await diagnoseWhereAgentRuns(state, async (target, needsLog) => {
        asked.push(`${target.node} ${needsLog}`);
        return target.node === "w1" ? timeoutLog : noLog;
      });
      assert.deepEqual(asked, ["cp1 true", "w1 true"]);
      assert.match(text, /^seed 000: the cluster agent cannot resolve Rancher's host ai-ear\.cn/);
      assert.match(text, / on w1 timed out after 20\.0 s/);
    });

    it("says where it looked when no node has the agent's log, and looks up from the init node", async () => {
      const asked: string[] = [];
      const text = await diagnoseWhereAgentRuns(state, async (target, needsLog) => {
        asked.push(`${target.node} ${needsLog}`);
        if (target.node === "w1") throw new Error(`ssh refused for ${state.apiToken}`);
        return needsLog
          ? noLog
          : { logLines: [], lookup: { result: "ok", seconds: "0.1", detail: "192.168.122.20" } };
      });
      assert.deepEqual(asked, ["cp1 true", "w1 true", "cp1 false"]);
      assert.match(
        text,
        /^no node of the cluster has a cattle-cluster-agent log \(looked on cp1, w1; could not look on w1 \(ssh refused for \[secret\]\)\); the cluster agent resolves ai-ear\.cn/,
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

    it("refuses a plan secret from the host that is not a Kubernetes name, before any request", () => {
      for (const [ns, name] of [
        ["../../v3/settings", "x"],
        ["fleet-default", "custom-abc/../../x"],
        ["Fleet-Default", "custom-abc"],
      ])
        assert.throws(
          () =>
            parseHostRegistration(
              `registered=yes agent=active server=https://ai-ear.cn namespace=${ns} secretName=${name}`,
              "node sza122030.local",
            ),
          /node sza122030\.local: the agent's connection info names a plan secret that is not a Kubernetes object name/,
        );
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
