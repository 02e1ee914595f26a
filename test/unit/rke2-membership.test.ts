import * as assert from "assert/strict";
import { membershipOf } from "../../components/rke2-cluster/provider";

describe("etcd membership from `etcdctl member list`", () => {
  // As RKE2's etcd lists them: members named <node-name>-<hex>, an unstarted learner unnamed.
  const list = [
    "625d1547a4642119, started, sza122020.local-1f0c2a3b, https://192.168.122.20:2380, https://192.168.122.20:2379, false",
    "7cc539fe0cf3c078, started, sza122021.local-9d4e5f60, https://192.168.122.21:2380, https://192.168.122.21:2379, true",
    "9a1b2c3d4e5f6071, unstarted, , https://192.168.122.22:2380, , true",
  ].join("\n");

  it("finds RKE2's <node>-<hex> members: a voter and a learner", () => {
    assert.equal(membershipOf(list, "sza122020.local", "192.168.122.20"), "voter");
    assert.equal(membershipOf(list, "sza122021.local", "192.168.122.21"), "learner");
  });

  it("finds an unstarted learner by its peer URL", () => {
    assert.equal(membershipOf(list, "sza122022.local", "192.168.122.22"), "learner");
  });

  it("says none only for a node the list does not hold, by name or address", () => {
    assert.equal(membershipOf(list, "sza122030.local", "192.168.122.30"), "none");
    assert.equal(membershipOf(list, "sza122020.localx", "192.168.122.2"), "none");
  });
});
