/** The libvirt DNS records provider against the lab's real libvirtd and dnsmasq, over real SSH. */
import * as assert from "assert/strict";
import { spawn } from "child_process";
import { libvirtDnsProvider, LibvirtDnsState } from "../../components/libvirt-dns/provider";
import { componentFile } from "../../components/assets";
import { dnsHostRecords, parseDnsHosts } from "../../components/libvirt-dns/render";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { digA, handAddDnsHost, handDeleteDnsHost, kvmConnection, lab, stepKey, virsh } from "./lab";

const SERVERS = ["192.168.122.20", "192.168.122.21", "192.168.122.22"];

function desired(records: Record<string, string[]>, network = "default"): LibvirtDnsState {
  const { privateKey: _key, ...connection } = kvmConnection();
  return {
    connection,
    ...stepKey(),
    network,
    subnet: "192.168.122.0/24",
    records: dnsHostRecords(records),
    script: componentFile(path.join(__dirname, "../../components/libvirt-dns"), "network.sh"),
  };
}

/** Adds one record carrying several hostnames by hand, as `virsh net-update` takes it. */
function handAddDnsHostNames(ip: string, hostnames: string[]): void {
  const names = hostnames.map((h) => `<hostname>${h}</hostname>`).join("");
  const xml = `<host ip='${ip}'>${names}</host>`;
  const r = virsh("net-update", "default", "add-last", "dns-host", xml, "--live", "--config");
  assert.equal(r.status, 0, r.stderr);
}

/** The network's `<dns><host>` records, live. */
function networkHosts(): ReturnType<typeof parseDnsHosts> {
  return parseDnsHosts(virsh("net-dumpxml", "default").stdout);
}

/** Asks dnsmasq for a name in a loop, in a process of its own, until stopped. */
function pollDig(name: string): { stop(): Promise<void>; answers(): string[] } {
  const loop = spawn("bash", [
    "-c",
    `while :; do a="$(dig +short +time=1 +tries=1 @192.168.122.1 ${name} | head -n1)"; ` +
      `echo "poll:\${a:-none}"; done`,
  ]);
  let out = "";
  loop.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((resolve) => loop.on("exit", () => resolve()));
  return {
    stop: async () => {
      loop.kill("SIGTERM");
      await exited;
    },
    answers: () => [...out.matchAll(/^poll:(\S+)$/gm)].map((m) => m[1]),
  };
}

describe("libvirt DNS records (real libvirtd + dnsmasq over SSH)", function () {
  this.timeout(120000);
  const provider = libvirtDnsProvider;
  const records = { "ai-ear.cn": SERVERS };

  it("create adopts the estate's existing records without touching the network", async () => {
    const result = await provider.create!(desired(records));
    assert.deepEqual(result.outs.lastChanges, []);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
  });

  it("restores a record removed by hand, and refresh sees the removal first", async () => {
    const state = desired(records);
    handDeleteDnsHost("192.168.122.21");
    assert.deepEqual(digA("ai-ear.cn"), ["192.168.122.20", "192.168.122.22"]);
    const read = await provider.read!("id", state);
    const observed = read.props as LibvirtDnsState;
    assert.deepEqual(
      observed.records.map((r) => r.ip),
      ["192.168.122.20", "192.168.122.22"],
    );
    const diff = await provider.diff!("id", observed, state);
    assert.equal(diff.changes, true);
    const updated = await provider.update!("id", observed, state);
    assert.deepEqual(updated.outs.lastChanges, ["added dns-host 192.168.122.21 ai-ear.cn"]);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
  });

  it("puts the stack's name back on a managed IP and keeps the name someone put there by hand", async () => {
    handDeleteDnsHost("192.168.122.22");
    handAddDnsHost("192.168.122.22", "wrong.example");
    try {
      const state = desired(records);
      const observed = (await provider.read!("id", state)).props as LibvirtDnsState;
      assert.equal(
        observed.records.find((r) => r.ip === "192.168.122.22"),
        undefined,
        "ai-ear.cn on .22 is gone",
      );
      assert.deepEqual(observed.foreignHostnames, [
        { ip: "192.168.122.22", hostnames: ["wrong.example"] },
      ]);
      assert.equal((await provider.diff!("id", observed, state)).changes, true);
      const updated = await provider.update!("id", observed, state);
      assert.match(
        updated.outs.lastChanges.join("\n"),
        /^(modified|replaced \(delete \+ add\)) dns-host 192\.168\.122\.22 ai-ear\.cn,wrong\.example$/,
      );
      assert.deepEqual(digA("ai-ear.cn"), SERVERS);
      assert.deepEqual(digA("wrong.example"), ["192.168.122.22"]);
    } finally {
      handDeleteDnsHost("192.168.122.22");
      handAddDnsHost("192.168.122.22", "ai-ear.cn");
    }
  });

  it("keeps a hand-made name on a managed IP through update and delete, answering all along", async () => {
    handDeleteDnsHost("192.168.122.22");
    handAddDnsHostNames("192.168.122.22", ["ai-ear.cn", "hand.lab"]);
    try {
      const state = desired(records);
      const observed = (await provider.read!("id", state)).props as LibvirtDnsState;
      assert.deepEqual(
        observed.records,
        dnsHostRecords(records),
        "the stack's names are all there",
      );
      assert.deepEqual(observed.foreignHostnames, [
        { ip: "192.168.122.22", hostnames: ["hand.lab"] },
      ]);
      assert.equal((await provider.diff!("id", observed, state)).changes, false);
      const updated = await provider.update!("id", observed, state);
      assert.deepEqual(updated.outs.lastChanges, []);
      assert.deepEqual(digA("hand.lab"), ["192.168.122.22"]);

      // Delete takes only the stack's names: .20 and .21 go, .22 stays with the hand-made name.
      await provider.delete!("id", updated.outs);
      assert.deepEqual(digA("ai-ear.cn"), []);
      assert.deepEqual(digA("hand.lab"), ["192.168.122.22"]);
      assert.deepEqual(networkHosts(), [{ ip: "192.168.122.22", hostnames: ["hand.lab"] }]);
    } finally {
      handDeleteDnsHost("192.168.122.22");
      await provider.create!(desired(records));
    }
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
    assert.deepEqual(digA("hand.lab"), []);
  });

  it("renames a managed IP's name in one net-update; a hand-made name there keeps answering", async () => {
    const renamed = desired({
      "ai-ear.cn": ["192.168.122.20", "192.168.122.21"],
      "sza122022.lab": ["192.168.122.22"],
    });
    handDeleteDnsHost("192.168.122.22");
    handAddDnsHostNames("192.168.122.22", ["ai-ear.cn", "hand.lab"]);
    try {
      const before = (await provider.read!("id", desired(records))).props as LibvirtDnsState;
      const poll = pollDig("hand.lab");
      let updated: pulumi.dynamic.UpdateResult;
      try {
        updated = await provider.update!("id", before, renamed);
      } finally {
        await poll.stop();
      }
      const answers = poll.answers();
      assert.ok(answers.length > 0, "the poll ran while the update did");
      assert.deepEqual(digA("sza122022.lab"), ["192.168.122.22"]);
      assert.deepEqual(digA("ai-ear.cn"), ["192.168.122.20", "192.168.122.21"]);
      assert.deepEqual(digA("hand.lab"), ["192.168.122.22"]);
      const [change] = updated.outs.lastChanges as string[];
      if (change.startsWith("modified")) {
        // libvirt 10.6 and later: one `modify` replaced the record in place.
        assert.deepEqual(updated.outs.lastChanges, [
          "modified dns-host 192.168.122.22 hand.lab,sza122022.lab",
        ]);
        assert.deepEqual(
          answers.filter((a) => a !== "192.168.122.22"),
          [],
          "hand.lab went unanswered during the modify",
        );
      } else {
        // libvirt before 10.6 (the lab's Debian 12 has 9.0.0) refuses `modify dns-host`; the
        // provider then deletes and adds back at once and says so rather than hiding the gap.
        assert.deepEqual(updated.outs.lastChanges, [
          "replaced (delete + add) dns-host 192.168.122.22 hand.lab,sza122022.lab",
        ]);
        console.log(
          `      (libvirt refused modify; ${answers.filter((a) => a !== "192.168.122.22").length}` +
            ` of ${answers.length} polls of hand.lab missed during delete + add)`,
        );
      }
    } finally {
      handDeleteDnsHost("192.168.122.22");
      await provider.create!(desired(records));
    }
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
    assert.deepEqual(digA("sza122022.lab"), []);
  });

  it("leaves records it does not own alone, even when they share the hostname", async () => {
    handAddDnsHost("192.168.122.50", "ai-ear.cn");
    try {
      const state = desired(records);
      const read = (await provider.read!("id", state)).props as LibvirtDnsState;
      assert.deepEqual(read.unmanagedRecords, [{ ip: "192.168.122.50", hostnames: ["ai-ear.cn"] }]);
      const again = await provider.update!("id", read, state);
      assert.deepEqual(again.outs.lastChanges, []);
      assert.deepEqual(digA("ai-ear.cn"), [...SERVERS, "192.168.122.50"].sort());
      // Deleting the stack's records removes only its own IPs, never the shared hostname.
      await provider.delete!("id", again.outs);
      assert.deepEqual(digA("ai-ear.cn"), ["192.168.122.50"]);
    } finally {
      handDeleteDnsHost("192.168.122.50");
      await provider.create!(desired(records));
    }
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
  });

  it("with libvirt.removeStaleRecords, takes the stack's name off stale records and keeps their other names", async () => {
    handAddDnsHost("192.168.122.50", "ai-ear.cn");
    handAddDnsHostNames("192.168.122.60", ["ai-ear.cn", "old-rancher.lab"]);
    try {
      assert.deepEqual(digA("ai-ear.cn"), [...SERVERS, "192.168.122.50", "192.168.122.60"].sort());
      const keep = desired(records);
      const read = (await provider.read!("id", keep)).props as LibvirtDnsState;
      // Off by default: reported (the component warns), not a change.
      assert.equal((await provider.diff!("id", read, keep)).changes, false);
      const remove = { ...keep, removeStaleRecords: true };
      assert.equal((await provider.diff!("id", read, remove)).changes, true);
      const result = await provider.update!("id", read, remove);
      assert.deepEqual(digA("ai-ear.cn"), SERVERS);
      assert.deepEqual(digA("old-rancher.lab"), ["192.168.122.60"]);
      assert.ok(
        result.outs.lastChanges.includes(
          "took ai-ear.cn off the stale record of 192.168.122.50 (libvirt.removeStaleRecords)",
        ),
        JSON.stringify(result.outs.lastChanges),
      );
      assert.deepEqual(
        networkHosts().filter((h) => !SERVERS.includes(h.ip)),
        [{ ip: "192.168.122.60", hostnames: ["old-rancher.lab"] }],
      );
      assert.equal((await provider.diff!("id", result.outs, remove)).changes, false);
    } finally {
      for (const h of networkHosts()) if (!SERVERS.includes(h.ip)) handDeleteDnsHost(h.ip);
      await provider.create!(desired(records));
    }
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
  });

  it("dropping one of three same-name records from the config leaves the other two answering", async () => {
    const three = desired(records);
    const two = desired({ "ai-ear.cn": ["192.168.122.20", "192.168.122.22"] });
    const result = await provider.update!("id", three, two);
    assert.deepEqual(result.outs.lastChanges, ["removed dns-host 192.168.122.21"]);
    assert.deepEqual(digA("ai-ear.cn"), ["192.168.122.20", "192.168.122.22"]);
    await provider.update!("id", two, three);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
  });

  it("records survive a network restart and a libvirtd restart (--config)", async () => {
    await provider.create!(desired(records));
    assert.equal(virsh("net-destroy", "default").status, 0);
    assert.equal(virsh("net-start", "default").status, 0);
    // The lab re-attaches its hosts to the new bridge.
    assert.equal(lab("up").status, 0);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
    assert.equal(lab("restart-libvirtd").status, 0);
    const read = (await provider.read!("id", desired(records))).props as LibvirtDnsState;
    assert.deepEqual(read.records, dnsHostRecords(records));
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
  });

  it("moves the DHCP domain off `local` in the persistent definition only when asked", async () => {
    const persistentDomain = () =>
      /<domain name='([^']*)'/.exec(virsh("net-dumpxml", "--inactive", "default").stdout)?.[1];
    const liveDomain = () =>
      /<domain name='([^']*)'/.exec(virsh("net-dumpxml", "default").stdout)?.[1];
    assert.equal((await provider.create!(desired(records))).outs.configuredDomain, "local");
    try {
      const moved = await provider.create!({ ...desired(records), dhcpDomain: "lab.example" });
      assert.deepEqual(moved.outs.lastChanges, [
        "set DHCP domain lab.example (applies at the next network restart)",
      ]);
      assert.equal(persistentDomain(), "lab.example");
      assert.equal(liveDomain(), "local", "the running network was changed under its guests");
      const again = await provider.create!({ ...desired(records), dhcpDomain: "lab.example" });
      assert.deepEqual(again.outs.lastChanges, []);
    } finally {
      await provider.create!({ ...desired(records), dhcpDomain: "local" });
    }
    assert.equal(persistentDomain(), "local");
  });

  it("says so when the network does not exist", async () => {
    await assert.rejects(
      provider.create!(desired(records, "nosuch")),
      /network 'nosuch' does not exist/,
    );
  });

  it("refuses a host whose key differs from the pinned one, naming both fingerprints", async () => {
    const state = desired(records);
    const other =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLWt2bS1ob3N0LS0tLS0tLS0tLS0t";
    await assert.rejects(
      provider.read!("id", { ...state, connection: { ...state.connection, hostKey: other } }),
      /does not match the pinned key: expected SHA256:\S+, presented SHA256:\S+/,
    );
  });
});
