/** The libvirt DNS records provider against the lab's real libvirtd and dnsmasq, over real SSH. */
import * as assert from "assert/strict";
import { libvirtDnsProvider, LibvirtDnsState } from "../../components/libvirt-dns/provider";
import { componentFile } from "../../components/assets";
import { dnsHostRecords } from "../../components/libvirt-dns/render";
import * as path from "path";
import { digA, handAddDnsHost, handDeleteDnsHost, kvmConnection, lab, virsh } from "./lab";

const SERVERS = ["192.168.122.20", "192.168.122.21", "192.168.122.22"];

function desired(records: Record<string, string[]>, network = "default"): LibvirtDnsState {
  const { privateKey, ...connection } = kvmConnection();
  return {
    connection,
    sshPrivateKey: privateKey,
    network,
    subnet: "192.168.122.0/24",
    records: dnsHostRecords(records),
    script: componentFile(path.join(__dirname, "../../components/libvirt-dns"), "network.sh"),
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

  it("repairs a record whose hostname was changed by hand, deleting it by IP", async () => {
    handDeleteDnsHost("192.168.122.22");
    handAddDnsHost("192.168.122.22", "wrong.example");
    const state = desired(records);
    const observed = (await provider.read!("id", state)).props as LibvirtDnsState;
    assert.deepEqual(observed.records.find((r) => r.ip === "192.168.122.22")?.hostnames, [
      "wrong.example",
    ]);
    await provider.update!("id", observed, state);
    assert.deepEqual(digA("ai-ear.cn"), SERVERS);
    assert.deepEqual(digA("wrong.example"), []);
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
