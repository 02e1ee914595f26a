/**
 * join-gate.sh's cluster check: a joining server whose etcd answers for another cluster than the
 * first server's fails at once, naming the host and both cluster IDs in hex (the IDs of
 * `member list -w json` are decimal uint64, beyond bash's signed arithmetic). Runs the script
 * with bash, a kubectl that reports the apiserver ready and the Node Ready and a voter, and a
 * members script that prints a fixed member list.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { componentFile } from "../../components/assets";
import { scriptWithParams } from "../../components/ssh/run-script";

const SCRIPT = componentFile(path.join(__dirname, "../../components/rke2-cluster"), "join-gate.sh");

/** A member list as etcd 3.4's `etcdctl member list -w json` prints it. */
function memberList(clusterId: string, learner = false): string {
  return (
    `{"header":{"cluster_id":${clusterId},"member_id":7094278452224664857,"raft_term":3},` +
    `"members":[{"ID":7094278452224664857,"name":"sza122021.local-9d4e5f60",` +
    `"peerURLs":["https://192.168.122.21:2380"],"clientURLs":["https://192.168.122.21:2379"]` +
    `${learner ? ',"isLearner":true' : ""}}]}`
  );
}

describe("join-gate.sh and the first server's etcd cluster", function () {
  this.timeout(30000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-gate-"));
  before(() => {
    fs.mkdirSync(path.join(dataDir, "bin"));
    fs.writeFileSync(
      path.join(dataDir, "bin", "kubectl"),
      `#!/bin/bash\ncase "$*" in *readyz*) echo ok ;; *'type=="'*) echo True ;; *) echo '{}' ;; esac\n`,
      { mode: 0o755 },
    );
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  function gate(list: string, first: { name: string; clusterId: string } | undefined) {
    const text = scriptWithParams(SCRIPT, {
      NODE_NAME: "sza122021.local",
      TIMEOUT_SECONDS: "0",
      POLL_SECONDS: "1",
      MEMBERS_SCRIPT: `cat <<'EOF'\n${list}\nEOF`,
      DATA_DIR: dataDir,
      FIRST_SERVER: first?.name ?? "",
      FIRST_SERVER_CLUSTER_ID: first?.clusterId ?? "",
    });
    return spawnSync("bash", ["-s"], { input: text, encoding: "utf8", timeout: 20000 });
  }

  it("passes a server whose etcd answers for the first server's cluster", () => {
    const r = gate(memberList("14841639068965178418"), {
      name: "sza122020.local",
      clusterId: "cdf818194e3a8c32",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /ok: sza122021\.local joined/);
  });

  it("fails a server that started a cluster of its own, naming it and both cluster IDs", () => {
    // Ready, a voter and without learners in its own one-member cluster.
    const r = gate(memberList("18446744073709551615"), {
      name: "sza122020.local",
      clusterId: "cdf818194e3a8c32",
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /error: join gate for sza122021\.local: its etcd serves cluster ffffffffffffffff, not cluster cdf818194e3a8c32 of the first server sza122020\.local: sza122021\.local started an etcd cluster of its own/,
    );
    assert.doesNotMatch(r.stderr, /^ok:/m);
  });

  it("converts an ID whose hex digits are zeros but the first (4096 = 1000)", () => {
    const r = gate(memberList("4096"), { name: "sza122020.local", clusterId: "1000" });
    assert.equal(r.status, 0, r.stderr);
  });

  it("still waits for a learner of the right cluster (and times out naming it)", () => {
    const r = gate(memberList("14841639068965178418", true), {
      name: "sza122020.local",
      clusterId: "cdf818194e3a8c32",
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /timed out after \d+s; missing: no learner in etcd/);
  });

  it("checks no cluster ID on the first server itself", () => {
    const r = gate(memberList("18446744073709551615"), undefined);
    assert.equal(r.status, 0, r.stderr);
  });
});
