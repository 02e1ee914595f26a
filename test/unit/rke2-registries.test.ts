import * as assert from "assert/strict";
import * as YAML from "yaml";
import { foundNodeState, nodeStartInputs, RUNNING_SERVER_FACTS } from "./fixtures";
import { nodeStartChanges } from "../../components/rke2-cluster/provider";
import {
  OTHER_SECRET,
  parseRegistryAuth,
  planRegistries,
  RegistriesWanted,
  STACK_SECRET,
} from "../../components/rke2-cluster/registries";
import {
  decideStart,
  parseNodeFacts,
  StartContext,
} from "../../components/rke2-cluster/start-plan";
import { ConfigReader } from "../../infra/config/reader";
import { endpointsWithoutScheme, readRegistries } from "../../infra/config/registries";

const HOST = "sza122020.local";
const PATH = "/etc/rancher/rke2/registries.yaml";
/** The seed estate's plain-HTTP registry, with credentials. */
const WANTED: RegistriesWanted = {
  spec: {
    mirrors: { "192.168.122.156:30000": { endpoint: ["http://192.168.122.156:30000"] } },
    configs: {},
  },
  auth: { "192.168.122.156:30000": { username: "pull", password: "s3cret-pw" } },
};
const MIRROR = "mirrors/192.168.122.156:30000";
const CONFIG = "configs/192.168.122.156:30000";

describe("registries.yaml adopted, not replaced", () => {
  it("writes the stack's mirror and credentials where the host has no file", () => {
    const plan = planRegistries(WANTED, undefined, HOST, PATH);
    assert.deepEqual(plan.changedEntries, [MIRROR, CONFIG]);
    assert.deepEqual(plan.found, { [MIRROR]: "(not set)", [CONFIG]: "(not set)" });
    assert.deepEqual(YAML.parse(plan.text), {
      mirrors: { "192.168.122.156:30000": { endpoint: ["http://192.168.122.156:30000"] } },
      configs: { "192.168.122.156:30000": { auth: { username: "pull", password: "s3cret-pw" } } },
    });
    // The plain view carries markers, never the credentials.
    assert.ok(!JSON.stringify(plan.desired).includes("s3cret-pw"));
    assert.match(plan.desired[CONFIG], new RegExp(STACK_SECRET.replace(/[()]/g, "\\$&")));
  });

  it("keeps the host's other entries and comments, and replaces the entry it manages", () => {
    const found = [
      "# written by hand in 2024",
      "mirrors:",
      "  docker.io:",
      "    endpoint:",
      '      - "https://mirror.example.com"',
      '  "192.168.122.156:30000":',
      "    endpoint:",
      "      - 192.168.122.156:30000 # no scheme: RKE2 tries HTTPS",
      "",
    ].join("\n");
    const plan = planRegistries(WANTED, found, HOST, PATH);
    assert.deepEqual(plan.changedEntries, [MIRROR, CONFIG]);
    assert.ok(plan.text.includes("# written by hand in 2024"));
    const written = YAML.parse(plan.text) as Record<string, Record<string, unknown>>;
    assert.deepEqual(written.mirrors["docker.io"], { endpoint: ["https://mirror.example.com"] });
    assert.deepEqual(written.mirrors["192.168.122.156:30000"], {
      endpoint: ["http://192.168.122.156:30000"],
    });
  });

  it("changes nothing where the host has the stack's entries", () => {
    const first = planRegistries(WANTED, undefined, HOST, PATH);
    const again = planRegistries(WANTED, first.text, HOST, PATH);
    assert.deepEqual(again.changedEntries, []);
    assert.equal(again.text, "");
    assert.deepEqual(again.found, again.desired);
  });

  it("sees a password on the host that is not the stack's, without showing either", () => {
    const host = planRegistries(
      { ...WANTED, auth: { "192.168.122.156:30000": { username: "pull", password: "old-pw" } } },
      undefined,
      HOST,
      PATH,
    ).text;
    const plan = planRegistries(WANTED, host, HOST, PATH);
    assert.deepEqual(plan.changedEntries, [CONFIG]);
    assert.ok(plan.found[CONFIG].includes(OTHER_SECRET));
    assert.ok(plan.found[CONFIG].includes(STACK_SECRET), "the user name is the stack's");
    assert.ok(!JSON.stringify(plan.found).includes("old-pw"));
  });

  it("refuses a file RKE2 could not load, naming host and file, never quoting it", () => {
    for (const bad of [
      "mirrors: [\n  password: hunter2",
      "- password: hunter2\n",
      "mirrors: hunter2\n",
    ]) {
      assert.throws(
        () => planRegistries(WANTED, bad, HOST, PATH),
        (err: Error) =>
          err.message.includes(`${PATH} on ${HOST}`) &&
          err.message.includes("Nothing was changed") &&
          !err.message.includes("hunter2"),
      );
    }
  });
});

describe("registryAuth, the secret", () => {
  it("reads basic auth, a token and an identity token", () => {
    assert.deepEqual(
      parseRegistryAuth(
        '{"a:5000":{"username":"u","password":"p"},"b":{"auth":"dTpw"},"c":{"identity_token":"t"}}',
      ),
      {
        "a:5000": { username: "u", password: "p" },
        b: { auth: "dTpw" },
        c: { identity_token: "t" },
      },
    );
  });

  for (const [text, where] of [
    ["not json pw=hunter2", "registryAuth is not JSON"],
    [
      '{"a":{"username":"hunter2"}}',
      'registryAuth["a"] has a username or a password without the other',
    ],
    ['{"a":{"passwd":"hunter2"}}', 'registryAuth["a"] has passwd'],
    [
      '{"a":{"password":"","username":"hunter2"}}',
      'registryAuth["a"].password is not a non-empty string',
    ],
    ['{"a":{}}', 'registryAuth["a"] has no credentials'],
  ]) {
    it(`refuses ${where.replace(/^registryAuth\S* /, "")}, naming the registry and no value`, () => {
      assert.throws(
        () => parseRegistryAuth(text),
        (err: Error) => err.message.startsWith(where) && !err.message.includes("hunter2"),
      );
    });
  }
});

describe("rke2.registries, the stack key", () => {
  const read = (value: unknown) => {
    const r = new ConfigReader("rke2-remediation");
    const spec = readRegistries(r, value, "rke2.registries");
    return { spec, problems: r.problems.map((p) => `${p.key}: ${p.message}`) };
  };

  it("reads mirrors and TLS into RKE2's names", () => {
    const { spec, problems } = read({
      mirrors: {
        "docker.io": {
          endpoint: ["https://mirror.example.com:5000"],
          rewrite: { "^rancher/(.*)": "r/$1" },
        },
      },
      configs: {
        "mirror.example.com:5000": {
          tls: { caFile: "/etc/ssl/reg-ca.pem", insecureSkipVerify: false },
        },
      },
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(spec, {
      mirrors: {
        "docker.io": {
          endpoint: ["https://mirror.example.com:5000"],
          rewrite: { "^rancher/(.*)": "r/$1" },
        },
      },
      configs: {
        "mirror.example.com:5000": {
          tls: { ca_file: "/etc/ssl/reg-ca.pem", insecure_skip_verify: false },
        },
      },
    });
  });

  it("refuses credentials in the plain key, naming it and never the value", () => {
    const { problems } = read({
      configs: { "reg:5000": { auth: { username: "u", password: "hunter2" } } },
    });
    assert.equal(problems.length, 1);
    assert.match(
      problems[0],
      /^rke2-remediation:rke2\.registries\.configs\["reg:5000"\]\.auth: .*registryAuth/,
    );
    assert.ok(!problems[0].includes("hunter2"));
  });

  it("refuses a credential in an endpoint URL, a scheme RKE2 does not speak and a relative file", () => {
    const { problems } = read({
      mirrors: { "docker.io": { endpoint: ["https://u:hunter2@reg:5000", "ftp://reg"] } },
      configs: { reg: { tls: { caFile: "ca.pem" } } },
    });
    assert.equal(problems.length, 3, problems.join("\n"));
    assert.ok(problems.every((p) => !p.includes("hunter2")));
  });

  it("names a mirror endpoint without a scheme, which RKE2 reaches over HTTPS", () => {
    const { spec } = read({
      mirrors: { "192.168.122.156:30000": { endpoint: ["192.168.122.156:30000"] } },
    });
    assert.deepEqual(endpointsWithoutScheme(spec), [
      { registry: "192.168.122.156:30000", index: 0, endpoint: "192.168.122.156:30000" },
    ]);
  });
});

describe("registries.yaml in the node step", () => {
  const context: StartContext = {
    node: HOST,
    nodeIp: "192.168.122.20",
    role: "server",
    operation: "update",
    desired: { version: RUNNING_SERVER_FACTS.version },
    config: { changedKeys: [], hostNodeName: HOST, dataDir: "/var/lib/rancher/rke2" },
    facts: {
      ...RUNNING_SERVER_FACTS,
      hostName: HOST,
      addresses: ["192.168.122.20"],
      etcdData: true,
    },
  };

  it("restarts a running node whose registries.yaml changes, and writes it", () => {
    const d = decideStart({ ...context, registriesChanged: [MIRROR] });
    assert.equal(d.action, "restart");
    assert.equal(d.writeRegistries, true);
    assert.equal(d.writeConfig, false);
    assert.ok(d.reasons.some((r) => r.includes(`its registries.yaml changes in ${MIRROR}`)));
  });

  it("only verifies a node found running when first adopted, and writes nothing", () => {
    const d = decideStart({ ...context, operation: "create", registriesChanged: [MIRROR] });
    assert.equal(d.action, "verify");
    assert.equal(d.writeRegistries, false);
  });

  it("reads the file's facts, which the script reports", () => {
    const text = "mirrors: {}\n";
    const report = [
      "version=v1.35.7+rke2r1",
      "unit=yes",
      "active=yes",
      "config_sha256=none",
      "data_dir=/var/lib/rancher/rke2",
      `host_name=${HOST}`,
      "restart_pending=none",
      "registries_path=/etc/custom/registries.yaml",
      "registries_sha256=abc",
      `registries_b64=${Buffer.from(text).toString("base64")}`,
    ].join("\n");
    assert.deepEqual(parseNodeFacts(report, HOST, "agent").registries, {
      path: "/etc/custom/registries.yaml",
      sha256: "abc",
      text,
    });
    assert.throws(
      () => parseNodeFacts(report.replace(/registries_b64=.*/, ""), HOST, "agent"),
      /registries\.yaml exists but its text is missing/,
    );
  });

  it("runs again when an entry differs on the host or the stack's credentials change", () => {
    const inputs = nodeStartInputs(HOST, 20, {
      registries: JSON.stringify(WANTED),
      managedRegistries: { [MIRROR]: "m", [CONFIG]: "c" },
    });
    const found = foundNodeState(inputs);
    assert.deepEqual(nodeStartChanges(found, inputs), []);
    assert.deepEqual(
      nodeStartChanges(
        { ...found, managedRegistries: { [MIRROR]: "(not set)", [CONFIG]: "c" } },
        inputs,
      ),
      [`managedRegistries["${MIRROR}"]`],
    );
    const newPassword = JSON.stringify({
      ...WANTED,
      auth: { "192.168.122.156:30000": { username: "pull", password: "rotated" } },
    });
    assert.deepEqual(nodeStartChanges(found, { ...inputs, registries: newPassword }), [
      "registries",
    ]);
  });
});
