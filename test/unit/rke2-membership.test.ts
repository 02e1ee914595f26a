import * as assert from "assert/strict";
import { membershipOf } from "../../components/rke2-cluster/provider";

describe("etcd membership from `etcdctl member list`", () => {
  const list = [
    "625d1547a4642119, started, sza122020.local, http://192.168.122.20:2380, http://192.168.122.20:2379, false",
    "7cc539fe0cf3c078, started, sza122021.local, http://192.168.122.21:2380, http://192.168.122.21:2379, true",
    "9a1b2c3d4e5f6071, unstarted, , http://192.168.122.22:2380, , true",
  ].join("\n");

  it("tells a voter, a learner and a stranger apart", () => {
    assert.equal(membershipOf(list, "sza122020.local"), "voter");
    assert.equal(membershipOf(list, "sza122021.local"), "learner");
    assert.equal(membershipOf(list, "sza122030.local"), "none");
  });
});
