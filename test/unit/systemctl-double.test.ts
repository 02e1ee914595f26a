/**
 * The lab's systemctl test double (test/lab/node-files/systemctl) stopping a unit that runs a
 * process: it returns once the unit's processes are gone, and a process group that ignores SIGTERM
 * is killed when the stop times out, as systemd does after TimeoutStopSec, so no process of the
 * unit outlives the stop beside the next start. And its `status`, which shows the unit's log as
 * systemd shows the journal.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const DOUBLE = path.join(__dirname, "..", "..", "..", "test", "lab", "node-files", "systemctl");

describe("the lab's systemctl double stopping a unit's processes", function () {
  this.timeout(30000);
  let dir: string;
  const groups: number[] = [];
  const systemctl = (...args: string[]) =>
    spawnSync("bash", [DOUBLE, ...args], {
      encoding: "utf8",
      // A 2 s stop timeout instead of the double's 10 s.
      env: { ...process.env, SYSTEMCTL_DOUBLE_DIR: dir, SYSTEMCTL_DOUBLE_STOP_TENTHS: "20" },
    });
  const unit = (name: string, exec: string) => {
    fs.mkdirSync(path.join(dir, "units", name), { recursive: true });
    fs.writeFileSync(path.join(dir, "units", name, "exec"), exec, { mode: 0o755 });
  };
  const groupAlive = (pid: number) =>
    spawnSync("pgrep", ["-g", String(pid)], { encoding: "utf8" }).status === 0;
  const started = (name: string) => {
    const pidFile = path.join(dir, "units", name, "pid");
    for (let i = 0; i < 50 && !fs.existsSync(pidFile); i++) spawnSync("sleep", ["0.1"]);
    const pid = Number(fs.readFileSync(pidFile, "utf8"));
    groups.push(pid);
    // The exec file writes "ready" once its trap is set.
    const ready = path.join(dir, `${name}.ready`);
    for (let i = 0; i < 50 && !fs.existsSync(ready); i++) spawnSync("sleep", ["0.1"]);
    return pid;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-systemctl-"));
  });
  afterEach(() => {
    // A unit the double failed to stop does not outlive the test.
    for (const pid of groups.splice(0)) spawnSync("kill", ["-KILL", "--", `-${pid}`]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("returns as soon as a unit that exits on SIGTERM is gone", () => {
    unit("quick.service", `#!/bin/bash\ntouch ${dir}/quick.service.ready\nexec sleep 60\n`);
    assert.equal(systemctl("start", "quick").status, 0);
    const pid = started("quick.service");
    const t0 = Date.now();
    assert.equal(systemctl("stop", "quick").status, 0);
    assert.ok(Date.now() - t0 < 5000, `stop took ${Date.now() - t0} ms`);
    assert.equal(groupAlive(pid), false);
  });

  it("kills a unit's process group that ignores SIGTERM once the stop times out", () => {
    unit(
      "stubborn.service",
      `#!/bin/bash\ntrap '' TERM\ntouch ${dir}/stubborn.service.ready\nwhile :; do sleep 0.2; done\n`,
    );
    assert.equal(systemctl("start", "stubborn").status, 0);
    const pid = started("stubborn.service");
    assert.equal(systemctl("stop", "stubborn").status, 0);
    for (let i = 0; i < 20 && groupAlive(pid); i++) spawnSync("sleep", ["0.1"]);
    assert.equal(groupAlive(pid), false, "a process of the unit outlived its stop");
    assert.equal(systemctl("is-active", "stubborn").status, 3);
  });
});

describe("the lab's systemctl double showing a unit's status", () => {
  let dir: string;
  const systemctl = (...args: string[]) =>
    spawnSync("bash", [DOUBLE, ...args], {
      encoding: "utf8",
      env: { ...process.env, SYSTEMCTL_DOUBLE_DIR: dir },
    });

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-systemctl-"));
    fs.mkdirSync(path.join(dir, "units", "rke2-server.service"), { recursive: true });
    const log = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n");
    fs.writeFileSync(path.join(dir, "units", "rke2-server.service", "log"), `${log}\n`);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("follows its state with the most recent log lines, 10 by default, as the journal's", () => {
    const out = systemctl("status", "--no-pager", "rke2-server").stdout.split("\n");
    assert.equal(out[0], "rke2-server.service: enabled=no active=no");
    assert.deepEqual(out.slice(2, -1), [
      "line 3",
      "line 4",
      "line 5",
      "line 6",
      "line 7",
      "line 8",
      "line 9",
      "line 10",
      "line 11",
      "line 12",
    ]);
  });

  it("shows as many as -n or --lines asks, and none with 0", () => {
    assert.deepEqual(
      systemctl("status", "-n", "2", "rke2-server").stdout.split("\n").slice(2, -1),
      ["line 11", "line 12"],
    );
    assert.match(
      systemctl("status", "--full", "--lines=1", "rke2-server").stdout,
      /\n\nline 12\n$/,
    );
    assert.equal(
      systemctl("status", "--lines=0", "rke2-server").stdout,
      "rke2-server.service: enabled=no active=no\n",
    );
  });
});
