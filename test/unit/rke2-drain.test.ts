import * as assert from "assert/strict";
import {
  drainNotice,
  nodeStartChanges,
  NodeStartInputs,
  NodeStartState,
} from "../../components/rke2-cluster/provider";
import { validateEnvironment } from "../../infra/config/validate";
import { estateWith, foundNodeState, nodeStartInputs, problemsOf, stackKey } from "./fixtures";

const HOST = "sza122021.local";
const FIRST = nodeStartInputs("sza122020.local", 20);
const INPUTS = nodeStartInputs(HOST, 21, {
  managedKeys: { "etcd-snapshot-retention": "5" },
  drain: {
    script: "drain",
    timeoutSeconds: 300,
    podSelector: "",
    through: { node: FIRST.node, connection: FIRST.connection },
  },
});
const FOUND = foundNodeState(INPUTS);

describe("rke2.drain in the node step's diff (what preview says)", () => {
  const notice = (olds: NodeStartState, news: NodeStartInputs) =>
    drainNotice(olds, news, nodeStartChanges(olds, news));

  it("says a running node that restarts is drained first, and why it restarts", () => {
    const wanted = { ...INPUTS, managedKeys: { "etcd-snapshot-retention": "6" } };
    assert.equal(
      notice(FOUND, wanted),
      `${HOST}: drains ${HOST} before RKE2 restarts there (managedKeys["etcd-snapshot-retention"]), and uncordons it once it is Ready`,
    );
    assert.match(
      notice({ ...FOUND, hostNodeName: "node-b" }, { ...INPUTS, version: "v1.36.3+rke2r1" })!,
      /: drains node-b before RKE2 restarts there \(version\)/,
    );
  });

  it("says nothing where nothing restarts, where RKE2 is stopped (it starts), or without rke2.drain", () => {
    assert.equal(notice(FOUND, INPUTS), undefined);
    assert.equal(notice(FOUND, { ...INPUTS, config: "token: t2\n" }), undefined);
    const wanted = { ...INPUTS, version: "v1.36.3+rke2r1" };
    assert.equal(notice({ ...FOUND, active: false }, wanted), undefined);
    const { drain: _drain, ...without } = wanted;
    const { drain: _found, ...foundWithout } = FOUND;
    assert.deepEqual(nodeStartChanges(foundWithout, without), ["version"]);
    assert.equal(notice(foundWithout, without), undefined);
  });
});

describe("rke2.drain and rke2.agentsMaxUnavailable, the stack keys", () => {
  it("are off and 1 by default, and read into the management cluster's settings", () => {
    const model = validateEnvironment("lab", estateWith("rke2.drain", undefined), {
      requireSecrets: false,
    }).model!;
    assert.deepEqual(model.management.drain, {
      enabled: false,
      timeoutSeconds: 300,
      podSelector: "",
    });
    assert.equal(model.management.agentsMaxUnavailable, 1);
    const on = validateEnvironment(
      "lab",
      estateWith("rke2.drain", { enabled: true, timeoutSeconds: 60, podSelector: "app!=batch" }),
      { requireSecrets: false },
    ).model!;
    assert.deepEqual(on.management.drain, {
      enabled: true,
      timeoutSeconds: 60,
      podSelector: "app!=batch",
    });
  });

  it("refuses a timeout out of range, no agents at a time, and either on a downstream cluster", () => {
    const keys = (path: string, value: unknown) =>
      problemsOf(estateWith(path, value)).map((p) => p.key);
    assert.deepEqual(keys("rke2.drain.timeoutSeconds", 5), [stackKey("rke2.drain.timeoutSeconds")]);
    assert.deepEqual(keys("rke2.agentsMaxUnavailable", 0), [stackKey("rke2.agentsMaxUnavailable")]);
    assert.deepEqual(keys("rancher.downstreamClusters[0].drain", { enabled: true }), [
      stackKey("rancher.downstreamClusters[0].drain"),
    ]);
  });
});
