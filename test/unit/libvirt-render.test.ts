import * as assert from "assert/strict";
import {
  planStaleRemoval,
  staleRecords,
  dnsHostOwnership,
  dnsHostRecords,
  parseDnsHosts,
  parseReplacedWithoutModify,
  planDnsHosts,
  renderDnsHostXml,
} from "../../components/libvirt-dns/render";

/** `virsh net-dumpxml default` on the seeds' KVM host after two records were added. */
const DUMPXML_WITH_HOSTS = `<network connections='5'>
  <name>default</name>
  <uuid>8d6a1f5e-4b1c-4f0e-9a57-2f1d3c6b7e21</uuid>
  <forward mode='nat'>
    <nat>
      <port start='1024' end='65535'/>
    </nat>
  </forward>
  <bridge name='virbr0' stp='on' delay='0'/>
  <mac address='52:54:00:3a:9c:11'/>
  <domain name='local'/>
  <dns>
    <forwarder addr='114.114.114.114'/>
    <host ip='192.168.122.20'>
      <hostname>ai-ear.cn</hostname>
      <hostname>rancher.ai-ear.cn</hostname>
    </host>
    <host ip='192.168.122.9'>
      <hostname>registry.local</hostname>
    </host>
  </dns>
  <ip address='192.168.122.1' netmask='255.255.255.0'>
    <dhcp>
      <range start='192.168.122.2' end='192.168.122.254'/>
      <host mac='52:54:00:aa:bb:cc' name='sza122020' ip='192.168.122.20'/>
    </dhcp>
  </ip>
</network>
`;

/** A fresh network: no <dns> element at all (only the DHCP <host> entries, which are not DNS). */
const DUMPXML_WITHOUT_DNS = `<network>
  <name>default</name>
  <bridge name='virbr0' stp='on' delay='0'/>
  <ip address='192.168.122.1' netmask='255.255.255.0'>
    <dhcp>
      <range start='192.168.122.2' end='192.168.122.254'/>
      <host mac='52:54:00:aa:bb:cc' name='sza122020' ip='192.168.122.20'/>
    </dhcp>
  </ip>
</network>
`;

describe("libvirt DNS host records", () => {
  describe("dnsHostRecords", () => {
    it("gives one record per IP carrying every hostname that points there", () => {
      const records = dnsHostRecords({
        "rancher.ai-ear.cn": ["192.168.122.20"],
        "ai-ear.cn": ["192.168.122.20", "192.168.122.21"],
      });
      assert.deepEqual(records, [
        { ip: "192.168.122.20", hostnames: ["ai-ear.cn", "rancher.ai-ear.cn"] },
        { ip: "192.168.122.21", hostnames: ["ai-ear.cn"] },
      ]);
    });

    it("sorts records by address numerically, so .9 comes before .20", () => {
      const records = dnsHostRecords({
        "ai-ear.cn": ["192.168.122.20", "192.168.122.9", "192.168.122.100"],
        "old.example": ["10.0.0.2", "9.1.1.1", "192.168.12.200"],
      });
      assert.deepEqual(
        records.map((r) => r.ip),
        [
          "9.1.1.1",
          "10.0.0.2",
          "192.168.12.200",
          "192.168.122.9",
          "192.168.122.20",
          "192.168.122.100",
        ],
      );
    });

    it("renders the same records whatever order the stack lists them in", () => {
      const a = dnsHostRecords({ x: ["192.168.122.21", "192.168.122.20"], y: ["192.168.122.20"] });
      const b = dnsHostRecords({ y: ["192.168.122.20"], x: ["192.168.122.20", "192.168.122.21"] });
      assert.deepEqual(a, b);
    });
  });

  describe("net-update XML", () => {
    it("adds one <host> naming the IP and each of its hostnames", () => {
      assert.equal(
        renderDnsHostXml({ ip: "192.168.122.20", hostnames: ["ai-ear.cn", "rancher.ai-ear.cn"] }),
        "<host ip='192.168.122.20'><hostname>ai-ear.cn</hostname><hostname>rancher.ai-ear.cn</hostname></host>",
      );
    });

    it("escapes XML metacharacters in addresses and names", () => {
      assert.equal(
        renderDnsHostXml({ ip: "1.2.3.4'/><x a='", hostnames: ['a<b>&"c'] }),
        "<host ip='1.2.3.4&apos;/&gt;&lt;x a=&apos;'><hostname>a&lt;b&gt;&amp;&quot;c</hostname></host>",
      );
    });
  });

  describe("parseDnsHosts", () => {
    it("reads single-quoted records with several hostnames each, sorted by address", () => {
      assert.deepEqual(parseDnsHosts(DUMPXML_WITH_HOSTS), [
        { ip: "192.168.122.9", hostnames: ["registry.local"] },
        { ip: "192.168.122.20", hostnames: ["ai-ear.cn", "rancher.ai-ear.cn"] },
      ]);
    });

    it("finds no records in a network without <dns>, ignoring DHCP <host> entries", () => {
      assert.deepEqual(parseDnsHosts(DUMPXML_WITHOUT_DNS), []);
    });

    it("reads double-quoted attributes and a record without hostnames", () => {
      const xml =
        '<network><dns><host ip="192.168.122.30"><hostname>a.example</hostname></host>' +
        '<host ip="192.168.122.31"/></dns></network>';
      assert.deepEqual(parseDnsHosts(xml), [
        { ip: "192.168.122.30", hostnames: ["a.example"] },
        { ip: "192.168.122.31", hostnames: [] },
      ]);
    });

    it("reads back what the renderer writes, escaped names included", () => {
      const records = dnsHostRecords({
        "ai-ear.cn": ["192.168.122.20", "192.168.122.21"],
        "a&b.example": ["192.168.122.21"],
      });
      const xml = `<network><dns>${records.map(renderDnsHostXml).join("")}</dns></network>`;
      assert.deepEqual(parseDnsHosts(xml), records);
    });
  });

  describe("planDnsHosts", () => {
    const seed = dnsHostRecords({ "ai-ear.cn": ["192.168.122.20", "192.168.122.21"] });
    const handAdded = { ip: "192.168.122.21", hostnames: ["ai-ear.cn", "backup.lab"] };

    it("changes nothing when the network already holds exactly the stack's records", () => {
      const plan = planDnsHosts(seed, seed, seed);
      assert.deepEqual(plan, { add: [], modify: [], remove: [], foreign: [] });
    });

    it("keeps a hand-added name on a managed IP: no change, reported as foreign", () => {
      const actual = [seed[0], handAdded];
      const plan = planDnsHosts(actual, seed, seed);
      assert.deepEqual(plan.modify, []);
      assert.deepEqual(plan.remove, []);
      assert.deepEqual(plan.foreign, [{ ip: "192.168.122.21", hostnames: ["backup.lab"] }]);
    });

    it("restores the stack's name into the record that kept a hand-made name", () => {
      const actual = [seed[0], { ip: "192.168.122.21", hostnames: ["backup.lab"] }];
      const plan = planDnsHosts(actual, seed, seed);
      assert.deepEqual(plan.modify, [handAdded]);
      assert.deepEqual(plan.add, []);
    });

    it("renames with one modify of the IP's record, never a delete", () => {
      const renamed = dnsHostRecords({
        "ai-ear.cn": ["192.168.122.20"],
        "new.lab": ["192.168.122.21"],
      });
      const plan = planDnsHosts(seed, renamed, seed);
      assert.deepEqual(plan, {
        add: [],
        modify: [{ ip: "192.168.122.21", hostnames: ["new.lab"] }],
        remove: [],
        foreign: [],
      });
    });

    it("renames around a hand-made name, which stays in the record", () => {
      const renamed = dnsHostRecords({
        "ai-ear.cn": ["192.168.122.20"],
        "new.lab": ["192.168.122.21"],
      });
      const plan = planDnsHosts([seed[0], handAdded], renamed, seed);
      assert.deepEqual(plan.modify, [
        { ip: "192.168.122.21", hostnames: ["backup.lab", "new.lab"] },
      ]);
    });

    it("on delete removes only the stack's names; a record with foreign names stays with them", () => {
      const plan = planDnsHosts([seed[0], handAdded], [], seed);
      assert.deepEqual(plan.remove, ["192.168.122.20"]);
      assert.deepEqual(plan.modify, [{ ip: "192.168.122.21", hostnames: ["backup.lab"] }]);
    });

    it("adds a record for an IP the network lacks and never touches unmanaged IPs", () => {
      const other = { ip: "192.168.122.50", hostnames: ["ai-ear.cn"] };
      const plan = planDnsHosts([seed[0], other], seed, seed);
      assert.deepEqual(plan.add, [seed[1]]);
      assert.deepEqual([...plan.modify, ...plan.remove], []);
    });
  });

  describe("dnsHostOwnership", () => {
    it("splits a network into the stack's names, foreign names on its IPs, and other IPs", () => {
      const claimed = [{ ip: "192.168.122.20", hostnames: ["ai-ear.cn"] }];
      assert.deepEqual(dnsHostOwnership(parseDnsHosts(DUMPXML_WITH_HOSTS), claimed), {
        owned: claimed,
        foreign: [{ ip: "192.168.122.20", hostnames: ["rancher.ai-ear.cn"] }],
        unmanaged: [{ ip: "192.168.122.9", hostnames: ["registry.local"] }],
      });
    });
  });

  it("reads the markers network.sh prints for records replaced without modify", () => {
    const out = "<!-- replaced without modify: 192.168.122.21 -->\n<network/>";
    assert.deepEqual(parseReplacedWithoutModify(out), ["192.168.122.21"]);
  });
});

describe("stale records of the stack's names (libvirt.removeStaleRecords)", () => {
  const desired = [
    { ip: "192.168.122.20", hostnames: ["ai-ear.cn"] },
    { ip: "192.168.122.21", hostnames: ["ai-ear.cn"] },
  ];
  const actual = [
    { ip: "192.168.122.20", hostnames: ["ai-ear.cn"] },
    { ip: "192.168.122.21", hostnames: ["ai-ear.cn"] },
    { ip: "192.168.122.50", hostnames: ["ai-ear.cn"] },
    { ip: "192.168.122.60", hostnames: ["ai-ear.cn", "old-rancher.lab"] },
    { ip: "192.168.122.70", hostnames: ["printer.lab"] },
  ];

  it("names each record on an IP the stack does not list that carries one of its names", () => {
    assert.deepEqual(staleRecords(actual.slice(2), desired), [
      { ip: "192.168.122.50", hostnames: ["ai-ear.cn"] },
      { ip: "192.168.122.60", hostnames: ["ai-ear.cn"] },
    ]);
    assert.deepEqual(
      staleRecords([{ ip: "192.168.122.70", hostnames: ["printer.lab"] }], desired),
      [],
    );
  });

  it("removes a record holding only the stack's name and keeps other names of a shared one", () => {
    assert.deepEqual(planStaleRemoval(actual, desired, desired), {
      modify: [{ ip: "192.168.122.60", hostnames: ["old-rancher.lab"] }],
      remove: ["192.168.122.50"],
      stale: [
        { ip: "192.168.122.50", hostnames: ["ai-ear.cn"] },
        { ip: "192.168.122.60", hostnames: ["ai-ear.cn"] },
      ],
    });
  });

  it("leaves an IP the stack held before alone (its own plan handles it)", () => {
    const before = [...desired, { ip: "192.168.122.50", hostnames: ["ai-ear.cn"] }];
    assert.deepEqual(planStaleRemoval(actual, desired, before).remove, []);
  });
});
