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

const running: NodeFacts = {
  version: "v1.35.6+rke2r1",
  unit: true,
  active: true,
  configSha256: "c1",
  etcdData: true,
  ownMembers: { error: "not read" },
};
const fresh: NodeFacts = {
  version: "none",
  unit: false,
  active: false,
  configSha256: "c1",
  etcdData: false,
  ownMembers: { error: "etcd did not answer" },
};

/** A joining server .21 on update, running, a voter of the first server's cluster, nothing changed. */
const base: StartContext = {
  node: "sza122021.local",
  nodeIp: "192.168.122.21",
  role: "server",
  operation: "update",
  desired: { version: "v1.35.6+rke2r1", configSha256: "c1" },
  previous: { version: "v1.35.6+rke2r1", configSha256: "c1" },
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
      /sza122021\.local holds etcd data .* lists neither sza122021\.local nor a peer URL on 192\.168\.122\.21\. Nothing was changed/,
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
      desired: { version: "v1.35.7+rke2r1", configSha256: "c2" },
    });
    assert.deepEqual([d.install, d.action], [false, "verify"]);
    assert.match(d.reasons.join(";"), /next pulumi up upgrades it/);
  });

  it("restarts nothing when nothing changed", () => {
    const d = decideStart(base);
    assert.deepEqual([d.install, d.moveStale, d.action], [false, false, "verify"]);
  });

  it("installs the new version and restarts on a version change", () => {
    const d = decideStart({ ...base, desired: { ...base.desired, version: "v1.35.7+rke2r1" } });
    assert.deepEqual([d.install, d.action], [true, "restart"]);
  });

  it("restarts on a config.yaml change", () => {
    const d = decideStart({ ...base, desired: { ...base.desired, configSha256: "c2" } });
    assert.deepEqual([d.install, d.action], [false, "restart"]);
  });

  it("installs again where the binary is present but the unit is not", () => {
    const d = decideStart({ ...base, facts: { ...running, unit: false, active: false } });
    assert.deepEqual([d.install, d.action], [true, "start"]);
  });

  it("does not restart for a state that recorded no config hash (written by an earlier release)", () => {
    const d = decideStart({
      ...base,
      previous: { version: "v1.35.6+rke2r1" },
      desired: { ...base.desired, configSha256: "c2" },
    });
    assert.equal(d.action, "verify");
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
      desired: { ...base.desired, configSha256: "c2" },
    });
    assert.deepEqual([d.action, d.membership], ["restart", undefined]);
  });
});

describe("node facts as rke2-facts.sh reports them", () => {
  it("reads a report", () => {
    const members = Buffer.from(memberList("111", "1", ["sza122020.local-0a1b2c3d"])).toString(
      "base64",
    );
    const f = parseNodeFacts(
      `version=v1.35.6+rke2r1\nunit=yes\nactive=yes\nconfig_sha256=ab12\netcd_data=yes\nmembers=${members}\n`,
      "sza122020.local",
      "server",
    );
    assert.deepEqual(
      [f.version, f.active, f.configSha256, f.etcdData],
      ["v1.35.6+rke2r1", true, "ab12", true],
    );
    assert.ok("members" in f.ownMembers);
  });

  it("refuses a report without a fact, naming the host", () => {
    assert.throws(
      () =>
        parseNodeFacts(
          "version=none\nunit=no\nactive=no\nconfig_sha256=none\n",
          "sza122022.local",
          "server",
        ),
      /cannot read RKE2's state on sza122022\.local: the fact "etcd_data" is missing/,
    );
  });

  it("refuses a member list that does not parse, naming the host", () => {
    const garbled = Buffer.from("Error: context deadline exceeded").toString("base64");
    assert.throws(
      () =>
        parseNodeFacts(
          `version=none\nunit=yes\nactive=yes\nconfig_sha256=none\netcd_data=yes\nmembers=${garbled}\n`,
          "sza122022.local",
          "server",
        ),
      /cannot read etcd's member list on sza122022\.local/,
    );
  });
});

describe("what makes a node step run again (diff after refresh or a stack change)", () => {
  const inputs = {
    node: "sza122021.local",
    nodeIp: "192.168.122.21",
    role: "server" as const,
    connection: { host: "192.168.122.21", port: 22, user: "root", hostKey: "ssh-ed25519 AAAA" },
    sshPrivateKey: "key",
    script: "start",
    factsScript: "facts",
    membersScript: "members",
    version: "v1.35.7+rke2r1",
    installCommand: "install",
    configSha256: "c1",
  };
  /** The state as refresh found it when all is well. */
  const found = {
    ...inputs,
    installedVersion: "v1.35.7+rke2r1",
    active: true,
    membership: "voter",
    startedAt: "t0",
    lastChanges: [],
  };

  it("sees no change when the node is as the stack says", () => {
    assert.deepEqual(nodeStartChanges(found, inputs), []);
  });

  const drifts: [string, Partial<typeof found>, string][] = [
    ["a stopped unit", { active: false }, "active"],
    ["another installed release", { installedVersion: "v1.34.1+rke2r1" }, "version"],
    ["a hand-edited config.yaml", { configSha256: "edited" }, "configSha256"],
    ["a server etcd does not list", { membership: "none" }, "membership"],
    ["a server whose etcd does not answer", { membership: "unreadable: timeout" }, "membership"],
  ];
  for (const [what, state, key] of drifts) {
    it(`sees ${what}`, () => {
      assert.deepEqual(nodeStartChanges({ ...found, ...state }, inputs), [key]);
    });
  }

  it("leaves a learner to the join gate, and a state without a config hash alone", () => {
    assert.deepEqual(nodeStartChanges({ ...found, membership: "learner" }, inputs), []);
    assert.deepEqual(nodeStartChanges({ ...found, configSha256: undefined! }, inputs), []);
  });
});
