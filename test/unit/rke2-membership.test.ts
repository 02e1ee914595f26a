import * as assert from "assert/strict";
import {
  membershipOf,
  parseMemberList,
  EtcdMemberList,
} from "../../components/rke2-cluster/etcd-members";

/**
 * Outputs in the shape `etcdctl member list -w json` prints (etcd 3.4 as on the lab's etcd,
 * IDs as decimal uint64): RKE2's members are named <node-name>-<8 hex>, an unstarted learner
 * has no name and no client URL, `isLearner` appears only when true.
 */
const HEADER =
  '"header":{"cluster_id":14841639068965178418,"member_id":7094278452224664857,"raft_term":3}';
const M20 =
  '{"ID":7094278452224664857,"name":"sza122020.local-1f0c2a3b","peerURLs":["https://192.168.122.20:2380"],"clientURLs":["https://192.168.122.20:2379","https://127.0.0.1:2379"]}';
const M21 =
  '{"ID":8991545587133591672,"name":"sza122021.local-9d4e5f60","peerURLs":["https://192.168.122.21:2380"],"clientURLs":["https://192.168.122.21:2379"],"isLearner":true}';
const M22 =
  '{"ID":11104395185374937201,"peerURLs":["https://192.168.122.22:2380"],"isLearner":true}';
const json = (...members: string[]) => `{${HEADER},"members":[${members.join(",")}]}\n`;

describe("etcd membership from `etcdctl member list -w json`", () => {
  let list: EtcdMemberList;
  before(() => (list = parseMemberList(json(M20, M21, M22), "sza122020.local")));

  it("keeps every digit of the uint64 IDs, reported in hex as etcdctl's table shows them", () => {
    assert.equal(list.readFrom, "6273f0aa4a8f2519");
    assert.equal(list.clusterId, "cdf818194e3a8c32");
    assert.deepEqual(
      list.members.map((m) => m.id),
      ["6273f0aa4a8f2519", "7cc863127ed43078", "9a1abc9665d4c071"],
    );
  });

  it("finds RKE2's <node>-<hex> members: a voter and a learner", () => {
    assert.equal(membershipOf(list, "sza122020.local", "192.168.122.20"), "voter");
    assert.equal(membershipOf(list, "sza122021.local", "192.168.122.21"), "learner");
  });

  it("finds an unstarted learner by its peer URL", () => {
    assert.equal(membershipOf(list, "sza122022.local", "192.168.122.22"), "learner");
  });

  it("reads several client URLs without shifting the learner flag", () => {
    assert.deepEqual(list.members[0].clientUrls, [
      "https://192.168.122.20:2379",
      "https://127.0.0.1:2379",
    ]);
    assert.equal(list.members[0].isLearner, false);
  });

  it("says none only for a node the list does not hold, by name or address", () => {
    assert.equal(membershipOf(list, "sza122030.local", "192.168.122.30"), "none");
    assert.equal(membershipOf(list, "sza122020.localx", "192.168.122.2"), "none");
    assert.equal(membershipOf(list, "sza122020", "192.168.122.200"), "none");
  });

  const unreadable: [string, string][] = [
    ["empty output", ""],
    [
      "the table output",
      "6274f2cd8a1a7c19, started, sza122020.local-1f0c2a3b, https://192.168.122.20:2380, https://192.168.122.20:2379, false",
    ],
    ["garbled JSON", json(M20).slice(0, 80)],
    ["a list without members", `{${HEADER},"members":[]}`],
    ["a list that lacks the member that answered", json(M21, M22)],
    ["an ID that is not a number", json(M20.replace("7094278452224664857", '"x"'))],
  ];
  for (const [what, output] of unreadable) {
    it(`refuses ${what} with an error naming the host, never "none"`, () => {
      assert.throws(
        () => parseMemberList(output, "sza122021.local"),
        /cannot read etcd's member list on sza122021\.local: .*Nothing was changed/,
      );
    });
  }
});
