import { foundNodeState, nodeStartInputs, RUNNING_SERVER_FACTS } from "./fixtures";
import * as assert from "assert/strict";
import { parseMemberList } from "../../components/rke2-cluster/etcd-members";
import { nodeStartChanges } from "../../components/rke2-cluster/provider";
import {
  decideStart,
  NodeFacts,
  parseNodeFacts,
  StartContext,
} from "../../components/rke2-cluster/start-plan";

/** etcd member lists in the shape `etcdctl member list -w json` prints them. */
function memberList(clusterId: string, readFrom: string, members: string[]): string {
  return JSON.stringify({
    header: { cluster_id: 0, member_id: 0, raft_term: 2 },
    members: members.map((m, i) => ({ ID: i + 1, name: m, peerURLs: [] })),
  })
    .replace('"cluster_id":0', `"cluster_id":${clusterId}`)
    .replace('"member_id":0', `"member_id":${readFrom}`);
}
const OLD_CLUSTER = parseMemberList(
  memberList("111", "1", ["sza122020.local-0a1b2c3d", "sza122021.local-4e5f6a7b"]),
  "sza122020.local",
);
const NEW_CLUSTER = parseMemberList(
  memberList("999", "1", ["sza122020.local-ffffffff"]),
  "sza122020.local",
);

const running: NodeFacts = RUNNING_SERVER_FACTS;
const fresh: NodeFacts = {
  version: "none",
  unit: false,
  active: false,
  configSha256: "none",
  dropIns: [],
  environment: [],
  tokenFiles: [],
  otherUnit: false,
  otherActive: false,
  dataDir: "/var/lib/rancher/rke2",
  hostName: "sza122021.local",
  addresses: ["192.168.122.21"],
  etcdData: false,
  etcdName: { error: "missing" },
  ownMembers: { error: "etcd did not answer" },
};
/** config.yaml as the stack wants it already. */
const unchanged = {
  changedKeys: [],
  hostNodeName: "sza122021.local",
  dataDir: "/var/lib/rancher/rke2",
};

/** A joining server .21 on update, running, a voter of the first server's cluster, nothing changed. */
const base: StartContext = {
  node: "sza122021.local",
  nodeIp: "192.168.122.21",
  role: "server",
  operation: "update",
  desired: { version: "v1.35.6+rke2r1" },
  config: unchanged,
  facts: running,
  joinsThrough: { node: "sza122020.local", members: OLD_CLUSTER },
};

describe("RKE2 start decisions: etcd data is never lost", () => {
  it("refuses to bootstrap a first server without data while another server holds etcd data", () => {
    // The first entry was rebuilt (or a new host was listed first): RKE2 would start a new
    // one-member cluster and every other server would then look like a non-member.
    assert.throws(
      () =>
        decideStart({
          ...base,
          node: "sza122020.local",
          nodeIp: "192.168.122.20",
          joinsThrough: undefined,
          facts: fresh,
          peersWithData: ["sza122021.local", "sza122022.local"],
        }),
      /sza122020\.local is listed first .* sza122021\.local, sza122022\.local already hold etcd data\. Nothing was changed\. List sza122021\.local first/,
    );
  });

  it("bootstraps a first server when no configured server holds etcd data", () => {
    const d = decideStart({
      ...base,
      operation: "create",
      joinsThrough: undefined,
      facts: fresh,
      peersWithData: [],
    });
    assert.deepEqual([d.install, d.moveStale, d.action], [true, false, "start"]);
  });

  it("never moves a joining server's data on update, even when the list does not name it", () => {
    assert.throws(
      () =>
        decideStart({ ...base, joinsThrough: { node: "sza122020.local", members: NEW_CLUSTER } }),
      /sza122021\.local holds etcd data .* member list names none of its member name \(sza122021\.local-4e5f6a7b\), node names \(sza122021\.local\) or addresses \(192\.168\.122\.21, 127\.0\.0\.1\)\. Nothing was changed/,
    );
  });

  it("moves aside (never deletes) the data of a joining server no member knows, only on create", () => {
    const d = decideStart({
      ...base,
      operation: "create",
      facts: { ...running, active: false },
      joinsThrough: { node: "sza122020.local", members: NEW_CLUSTER },
    });
    assert.deepEqual([d.moveStale, d.action, d.membership], [true, "start", "none"]);
  });

  it("keeps a learner's data", () => {
    const learner = parseMemberList(
      JSON.stringify({
        header: { cluster_id: 111, member_id: 1, raft_term: 2 },
        members: [
          { ID: 1, name: "sza122020.local-0a1b2c3d", peerURLs: ["https://192.168.122.20:2380"] },
          { ID: 2, peerURLs: ["https://192.168.122.21:2380"], isLearner: true },
        ],
      }),
      "sza122020.local",
    );
    const d = decideStart({
      ...base,
      operation: "create",
      facts: { ...running, active: false },
      joinsThrough: { node: "sza122020.local", members: learner },
    });
    assert.deepEqual([d.moveStale, d.membership], [false, "learner"]);
  });

  it("refuses a server whose own etcd belongs to another cluster than the one it joins", () => {
    assert.throws(
      () =>
        decideStart({
          ...base,
          operation: "create",
          facts: { ...running, ownMembers: NEW_CLUSTER },
        }),
      /sza122021\.local is a member of etcd cluster 3e7, but sza122020\.local, which it joins through, serves cluster 6f/,
    );
  });
});

describe("RKE2 start decisions: changes are applied, nothing else restarts", () => {
  it("adopts a server found running when the resource is created: verify only, no install", () => {
    const d = decideStart({
      ...base,
      operation: "create",
      desired: { version: "v1.35.7+rke2r1" },
      config: { ...unchanged, changedKeys: ["etcd-snapshot-retention"] },
    });
    assert.deepEqual([d.install, d.writeConfig, d.action], [false, false, "verify"]);
    assert.match(d.reasons.join(";"), /next pulumi up upgrades it/);
    assert.match(
      d.reasons.join(";"),
      /differs from the stack in etcd-snapshot-retention; .* file is kept as it is/,
    );
  });

  it("restarts nothing when nothing changed", () => {
    const d = decideStart(base);
    assert.deepEqual([d.install, d.moveStale, d.action], [false, false, "verify"]);
  });

  it("installs the new version and restarts on a version change", () => {
    const d = decideStart({ ...base, desired: { ...base.desired, version: "v1.35.7+rke2r1" } });
    assert.deepEqual([d.install, d.action], [true, "restart"]);
  });

  it("writes config.yaml and restarts when a managed key changes", () => {
    const d = decideStart({ ...base, config: { ...unchanged, changedKeys: ["cni"] } });
    assert.deepEqual([d.install, d.writeConfig, d.action], [false, true, "restart"]);
  });

  it("restarts a node whose earlier step changed it but did not get to restart it", () => {
    const d = decideStart({
      ...base,
      facts: { ...running, restartPending: "rke2 v1.35.6+rke2r1" },
    });
    assert.deepEqual([d.writeConfig, d.action], [false, "restart"]);
  });

  it("installs again where the binary is present but the unit is not", () => {
    const d = decideStart({ ...base, facts: { ...running, unit: false, active: false } });
    assert.deepEqual([d.install, d.action], [true, "start"]);
  });

  it("starts a stopped node", () => {
    const d = decideStart({ ...base, facts: { ...running, active: false } });
    assert.equal(d.action, "start");
  });

  it("restarts an agent on a config change; agents have no etcd facts", () => {
    const d = decideStart({
      ...base,
      role: "agent",
      joinsThrough: undefined,
      facts: { ...running, etcdData: false },
      config: { ...unchanged, changedKeys: ["node-ip"] },
    });
    assert.deepEqual([d.action, d.membership], ["restart", undefined]);
  });
});

describe("RKE2 start decisions: membership from the node's own facts (servers built by hand)", () => {
  /** The first server's cluster as RKE2 named it on hosts with short names. */
  const SHORT = parseMemberList(
    JSON.stringify({
      header: { cluster_id: 111, member_id: 1, raft_term: 2 },
      members: [
        { ID: 1, name: "sza122020-0a1b2c3d", peerURLs: ["https://192.168.122.20:2380"] },
        { ID: 2, name: "sza122021-4e5f6a7b", peerURLs: ["https://10.0.0.21:2380"] },
      ],
    }),
    "sza122020",
  );
  const through = { node: "sza122020", members: SHORT };
  const shortHost: StartContext = {
    ...base,
    node: "sza122021",
    operation: "create",
    config: { ...unchanged, hostNodeName: "sza122021" },
    joinsThrough: through,
  };

  it("refuses a stack name that is not the node name RKE2 uses on the host, naming both", () => {
    assert.throws(
      () =>
        decideStart({
          ...shortHost,
          node: "sza122021.local",
          facts: { ...running, hostName: "sza122021" },
        }),
      /sza122021\.local: RKE2 on this host uses the node name sza122021 .* not the stack's sza122021\.local\. Nothing was changed\. Set the node's name in the stack to sza122021/,
    );
  });

  it("lets a fresh host take the stack's name", () => {
    const d = decideStart({
      ...shortHost,
      node: "sza122021.local",
      facts: { ...fresh, hostName: "sza122021" },
      config: { ...unchanged, hostNodeName: "sza122021", changedKeys: ["node-name"] },
    });
    assert.deepEqual([d.install, d.writeConfig, d.action], [true, true, "start"]);
  });

  const proofs: [string, Partial<NodeFacts>][] = [
    [
      "its own etcd answering as a member",
      { etcdName: { error: "missing" }, addresses: [], ownMembers: { ...SHORT, readFrom: "2" } },
    ],
    ["its on-disk member name", { addresses: [] }],
    [
      "a peer URL on another of its addresses",
      { etcdName: { error: "missing" }, addresses: ["10.0.0.21"] },
    ],
  ];
  for (const [what, facts] of proofs) {
    it(`keeps the data of a stopped or running member proven by ${what}`, () => {
      const d = decideStart({
        ...shortHost,
        facts: {
          ...running,
          active: false,
          hostName: "other",
          etcdName: "sza122021-4e5f6a7b",
          ...facts,
        },
        config: { ...unchanged, hostNodeName: "sza122021" },
      });
      assert.deepEqual([d.moveStale, d.membership], [false, "voter"]);
    });
  }

  it("never stops a server whose own etcd serves, even when the list does not name it", () => {
    // Its etcd answers for the first server's cluster as a member the first server's list lacks.
    const own = parseMemberList(
      JSON.stringify({
        header: { cluster_id: 999, member_id: 9, raft_term: 2 },
        members: [{ ID: 9, name: "elsewhere-00000000", peerURLs: [] }],
      }),
      "sza122021",
    );
    assert.throws(
      () =>
        decideStart({
          ...shortHost,
          joinsThrough: { node: "sza122020", members: NEW_CLUSTER },
          facts: { ...running, etcdName: "elsewhere-00000000", addresses: [], ownMembers: own },
        }),
      /its own etcd answers as member 9 of cluster 3e7, yet sza122020's member list names none .* a server whose etcd runs is never stopped/,
    );
  });

  it("refuses to move data whose member name file cannot be read", () => {
    assert.throws(
      () =>
        decideStart({
          ...shortHost,
          joinsThrough: { node: "sza122020", members: NEW_CLUSTER },
          facts: { ...running, active: false, etcdName: { error: "unreadable" } },
        }),
      /member name file \(\/var\/lib\/rancher\/rke2\/server\/db\/etcd\/name\) is unreadable, so it cannot be shown never to have joined/,
    );
  });

  it("moves aside only what every fact says never joined, under the node's own data-dir", () => {
    const d = decideStart({
      ...shortHost,
      joinsThrough: { node: "sza122020", members: NEW_CLUSTER },
      facts: { ...running, active: false, dataDir: "/data/rke2", etcdName: "sza122021-99999999" },
      config: { ...unchanged, hostNodeName: "sza122021", dataDir: "/data/rke2" },
    });
    assert.deepEqual([d.moveStale, d.membership], [true, "none"]);
  });

  it("stops when the first server serves another cluster than state recorded", () => {
    assert.throws(
      () =>
        decideStart({
          ...base,
          recordedClusterId: "6f",
          joinsThrough: { node: "sza122020.local", members: NEW_CLUSTER },
        }),
      /sza122020\.local now serves etcd cluster 3e7, but state recorded the management cluster as 6f .* the first server was rebuilt/,
    );
    const first = decideStart({
      ...base,
      node: "sza122020.local",
      joinsThrough: undefined,
      facts: { ...running, ownMembers: OLD_CLUSTER },
      config: { ...unchanged, hostNodeName: "sza122020.local" },
      recordedClusterId: "6f",
    });
    assert.equal(first.etcdClusterId, "6f");
    assert.throws(
      () =>
        decideStart({
          ...base,
          node: "sza122020.local",
          joinsThrough: undefined,
          facts: { ...running, ownMembers: NEW_CLUSTER },
          config: { ...unchanged, hostNodeName: "sza122020.local" },
          recordedClusterId: "6f",
        }),
      /the first server was rebuilt/,
    );
  });
});

describe("RKE2 start decisions: release steps RKE2 supports", () => {
  it("refuses a downgrade and a step of more than one minor release, naming the node and the path", () => {
    assert.throws(
      () => decideStart({ ...base, desired: { version: "v1.33.13+rke2r1" } }),
      /sza122021\.local: it runs v1\.35\.6\+rke2r1 and rke2\.version asks for v1\.33\.13\+rke2r1, a downgrade/,
    );
    assert.throws(
      () =>
        decideStart({
          ...base,
          facts: { ...running, version: "v1.33.13+rke2r1" },
          desired: { version: "v1.36.1+rke2r1" },
        }),
      /skips v1\.34, v1\.35\. RKE2 upgrades one minor release at a time: .*v1\.34 -> v1\.35 -> v1\.36/,
    );
    assert.throws(
      () => decideStart({ ...base, facts: { ...running, version: "unknown" } }),
      /reports "unknown", which is not an RKE2 release/,
    );
  });

  it("allows a patch step and the next minor", () => {
    assert.equal(
      decideStart({ ...base, desired: { version: "v1.35.7+rke2r1" } }).action,
      "restart",
    );
    assert.equal(
      decideStart({ ...base, desired: { version: "v1.36.0+rke2r1" } }).action,
      "restart",
    );
  });
});

describe("node facts as rke2-facts.sh reports them", () => {
  const report = (extra: Record<string, string | undefined>) =>
    Object.entries({
      version: "v1.35.6+rke2r1",
      unit: "yes",
      active: "yes",
      config_sha256: "ab12",
      config_b64: Buffer.from("cni: calico\n").toString("base64"),
      data_dir: "/var/lib/rancher/rke2",
      host_name: "sza122020",
      addresses: "127.0.0.1 192.168.122.20 ",
      restart_pending: "none",
      etcd_data: "yes",
      etcd_name: Buffer.from("sza122020-0a1b2c3d").toString("base64"),
      ...extra,
    })
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n");

  it("reads a report", () => {
    const members = Buffer.from(memberList("111", "1", ["sza122020-0a1b2c3d"])).toString("base64");
    const f = parseNodeFacts(report({ members }), "sza122020", "server");
    assert.deepEqual(
      [
        f.version,
        f.active,
        f.configSha256,
        f.etcdData,
        f.configText,
        f.etcdName,
        f.addresses,
        f.restartPending,
      ],
      [
        "v1.35.6+rke2r1",
        true,
        "ab12",
        true,
        "cni: calico\n",
        "sza122020-0a1b2c3d",
        ["127.0.0.1", "192.168.122.20"],
        undefined,
      ],
    );
    assert.ok("members" in f.ownMembers);
  });

  it("refuses a report without a fact, naming the host", () => {
    assert.throws(
      () => parseNodeFacts(report({ etcd_data: undefined }), "sza122022.local", "server"),
      /cannot read RKE2's state on sza122022\.local: the fact "etcd_data" is missing/,
    );
    assert.throws(
      () => parseNodeFacts(report({ config_b64: undefined }), "sza122022.local", "server"),
      /config\.yaml exists but its text is missing/,
    );
  });

  it("refuses a member list that does not parse, naming the host", () => {
    const garbled = Buffer.from("Error: context deadline exceeded").toString("base64");
    assert.throws(
      () => parseNodeFacts(report({ members: garbled }), "sza122022.local", "server"),
      /cannot read etcd's member list on sza122022\.local/,
    );
  });
});

describe("what makes a node step run again (diff after refresh or a stack change)", () => {
  const managed = { cni: "calico", "etcd-snapshot-retention": "5" };
  const inputs = nodeStartInputs("sza122021.local", 21, {
    config: "token: t1\ncni: calico\netcd-snapshot-retention: 5\n",
    managedKeys: managed,
  });
  /** The state as refresh found it when all is well. */
  const found = foundNodeState(inputs);

  it("sees no change when the node is as the stack says", () => {
    assert.deepEqual(nodeStartChanges(found, inputs), []);
  });

  const drifts: [string, Partial<typeof found>, string][] = [
    ["a stopped unit", { active: false }, "active"],
    ["another installed release", { installedVersion: "v1.34.1+rke2r1" }, "version"],
    [
      "a hand-edited managed key",
      { managedKeys: { ...managed, cni: "canal" } },
      'managedKeys["cni"]',
    ],
    ["a restart that did not happen", { restartPending: "rke2 v1.35.7+rke2r1" }, "restartPending"],
    ["a server etcd does not list", { membership: "none" }, "membership"],
    ["a server whose etcd does not answer", { membership: "unreadable: timeout" }, "membership"],
    ["a state from before config.yaml was adopted", { config: undefined! }, "config"],
  ];
  for (const [what, state, key] of drifts) {
    it(`sees ${what}`, () => {
      assert.deepEqual(nodeStartChanges({ ...found, ...state }, inputs), [key]);
    });
  }

  it("names each managed key the stack changes, and a token change without showing it", () => {
    const news = {
      ...inputs,
      config: inputs.config.replace("t1", "t2"),
      managedKeys: { ...managed, "etcd-snapshot-retention": "7", "kubelet-arg": '["x"]' },
    };
    assert.deepEqual(nodeStartChanges(found, news), [
      'managedKeys["etcd-snapshot-retention"]',
      'managedKeys["kubelet-arg"]',
      "config",
    ]);
  });

  it("leaves a learner to the join gate", () => {
    assert.deepEqual(nodeStartChanges({ ...found, membership: "learner" }, inputs), []);
  });
});
