import { RUNNING_SERVER_FACTS } from "./fixtures";
/**
 * RKE2's configuration as RKE2 reads it (config.yaml, its drop-ins, `+` keys, token-file, the
 * unit's environment, RKE2's own defaults), and the decisions made from it on hand-built
 * servers: keys a drop-in overrides, keys a running cluster cannot change, tokens in any form,
 * roles, and release paths across servers.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import {
  ABSENT,
  FoundConfig,
  planConfig,
  sha256,
  tokenPassword,
} from "../../components/rke2-cluster/config-adoption";
import { renderRke2ServerConfig } from "../../components/rke2-cluster/config";
import {
  mergeRke2Config,
  parseEnvironmentFile,
} from "../../components/rke2-cluster/effective-config";
import { clusterReleaseProblem } from "../../components/rke2-cluster/releases";
import { decideStart, NodeFacts, parseNodeFacts } from "../../components/rke2-cluster/start-plan";
import { estateModel } from "../support/lab-stack";

const ESTATES = path.join(__dirname, "..", "..", "..", "test", "lab", "estates", "seed-003");
const RELEASE = "v1.35.6+rke2r1";
const PASSWORD = "lab-cluster-password";
const TOKEN = `K10${"ab".repeat(32)}::server:${PASSWORD}`;
const CONFIG = "/etc/rancher/rke2/config.yaml";
const DROP_IN = (name: string) => `${CONFIG}.d/${name}`;

function handWritten(host: string, variant = "as-found"): string {
  return fs
    .readFileSync(path.join(ESTATES, variant, host, "config.yaml"), "utf8")
    .replace("<cluster token>", TOKEN);
}

/** The stack's rendered keys for the lab's server `index`, with `change` applied to the model. */
function rendered(
  index: number,
  token = TOKEN,
  change: (c: Record<string, unknown>) => void = () => {},
) {
  const model = estateModel();
  const servers = model.nodes.filter((n) => n.cluster === "management");
  const cluster = { ...model.management } as unknown as Record<string, unknown>;
  change(cluster);
  return renderRke2ServerConfig({
    cluster: cluster as unknown as typeof model.management,
    node: servers[index],
    joinAddress: index === 0 ? undefined : servers[0].ip,
    token,
  });
}

/** A running joining server .21 with etcd data, as found: its config.yaml and what else is given. */
function found21(
  extra: Partial<FoundConfig> = {},
  text = handWritten("sza122021.local"),
): FoundConfig {
  return {
    text,
    hostName: "sza122021.local",
    release: RELEASE,
    holdsEtcdData: true,
    peerAddress: "192.168.122.21",
    ...extra,
  };
}

/** config.yaml of .21 without the keys named. */
function without(text: string, ...keys: string[]): string {
  const doc = YAML.parseDocument(text);
  for (const key of keys) doc.delete(key);
  return doc.toString();
}

describe("RKE2's effective configuration is read as RKE2 reads it", () => {
  it("lets a later drop-in replace a key, appends `+` keys, and takes a bare `+` key as a plain one", () => {
    const merged = mergeRke2Config(
      [
        { path: CONFIG, text: "cni: calico\ntls-san: [a]\nnode-label: [x=1]\n" },
        { path: DROP_IN("10-a.yaml"), text: "tls-san+: [b]\ncluster-cidr: 10.1.0.0/16\n" },
        {
          path: DROP_IN("20-b.yml"),
          text: "cluster-cidr: 10.2.0.0/16\nkubelet-arg+: [max-pods=250]\n",
        },
      ],
      [],
      "h",
    );
    assert.deepEqual(merged.get("tls-san"), {
      value: ["a", "b"],
      source: `${CONFIG} + ${DROP_IN("10-a.yaml")}`,
    });
    assert.deepEqual(merged.get("cluster-cidr"), {
      value: "10.2.0.0/16",
      source: DROP_IN("20-b.yml"),
    });
    assert.deepEqual(merged.get("kubelet-arg")?.value, ["max-pods=250"]);
  });

  it("takes RKE2_* variables only for settings no file makes, the later environment file winning", () => {
    const env = [
      {
        path: "/etc/default/rke2-server",
        variables: parseEnvironmentFile('RKE2_TOKEN="one"\nRKE2_NODE_NAME=a\n'),
      },
      {
        path: "/etc/sysconfig/rke2-server",
        variables: parseEnvironmentFile(
          "# comment\nexport RKE2_NODE_NAME='b'\nHOME=/root\nRKE2_DATA_DIR=/data/rke2\n",
        ),
      },
    ];
    const merged = mergeRke2Config([{ path: CONFIG, text: "data-dir: /srv/rke2\n" }], env, "h");
    assert.deepEqual(merged.get("node-name"), {
      value: "b",
      source: "RKE2_NODE_NAME in /etc/sysconfig/rke2-server",
    });
    assert.equal(merged.get("data-dir")?.source, CONFIG);
    assert.equal(merged.get("token")?.value, "one");
    assert.ok(!merged.has("home"));
  });

  it("refuses an environment that moves config.yaml, and a drop-in that does not parse, naming host and file", () => {
    assert.throws(
      () =>
        mergeRke2Config(
          [],
          [{ path: "/etc/default/rke2-server", variables: { RKE2_CONFIG_FILE: "/x.yaml" } }],
          "n1",
        ),
      /n1: \/etc\/default\/rke2-server sets RKE2_CONFIG_FILE/,
    );
    assert.throws(
      () =>
        mergeRke2Config(
          [{ path: DROP_IN("50-x.yaml"), text: `token: ${TOKEN}\ncni: [a\n` }],
          [],
          "n1",
        ),
      (err: Error) =>
        /cannot parse \/etc\/rancher\/rke2\/config\.yaml\.d\/50-x\.yaml on n1 \(line \d\)/.test(
          err.message,
        ) && !err.message.includes(PASSWORD),
    );
  });

  it("reads drop-ins, environment files and token files from the facts script's report", () => {
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const report = [
      "version=v1.35.6+rke2r1",
      "unit=yes",
      "active=no",
      "config_sha256=none",
      `config_dropin=${b64(DROP_IN("10-dir.yaml"))} ${b64("data-dir: /data/rke2\n")}`,
      `env_file=${b64("/etc/default/rke2-server")} ${b64("RKE2_TOKEN=x\n")}`,
      `token_file=${b64("/etc/rke2-token")} aa bb`,
      `token_file_error=${b64("/etc/missing")} missing`,
      "data_dir=/data/rke2",
      "host_name=sza122020.local",
      "addresses=192.168.122.20",
      "restart_pending=none",
      "etcd_data=yes",
      "etcd_name_error=missing",
      "other_unit=yes",
      "other_active=no",
    ].join("\n");
    const f = parseNodeFacts(report, "sza122020.local", "server");
    assert.deepEqual(f.dropIns, [{ path: DROP_IN("10-dir.yaml"), text: "data-dir: /data/rke2\n" }]);
    assert.deepEqual(f.environment, [
      { path: "/etc/default/rke2-server", variables: { RKE2_TOKEN: "x" } },
    ]);
    assert.deepEqual(f.tokenFiles, [
      { path: "/etc/rke2-token", sha256: "aa", passwordSha256: "bb" },
      { path: "/etc/missing", error: "missing" },
    ]);
    assert.throws(
      () =>
        parseNodeFacts(
          `${report}\nconfig_dropin_error=${b64(DROP_IN("60-x.yaml"))}`,
          "sza122020.local",
          "server",
        ),
      /cannot read \/etc\/rancher\/rke2\/config\.yaml\.d\/60-x\.yaml on sza122020\.local/,
    );
  });
});

describe("adoption decides from the effective configuration", () => {
  it("takes data-dir from a drop-in", () => {
    const plan = planConfig(
      rendered(1),
      found21({ dropIns: [{ path: DROP_IN("10-data.yaml"), text: "data-dir: /data/rke2/\n" }] }),
      "sza122021.local",
    );
    assert.equal(plan.dataDir, "/data/rke2");
    assert.deepEqual(plan.changedKeys, []);
  });

  it("refuses a changed managed key that a drop-in sets, naming the file, the key and its value", () => {
    const dropIns = [{ path: DROP_IN("90-ops.yaml"), text: "etcd-snapshot-retention: 9\n" }];
    assert.throws(
      () => planConfig(rendered(1), found21({ dropIns }), "sza122021.local"),
      /sza122021\.local: etcd-snapshot-retention is "9" \(\/etc\/rancher\/rke2\/config\.yaml\.d\/90-ops\.yaml\), read after \/etc\/rancher\/rke2\/config\.yaml, so writing "5" there would change nothing; remove etcd-snapshot-retention from that file or set rke2\.etcdSnapshot\.retention to its value\. Nothing was changed\./,
    );
    // The same value in the drop-in as in the stack: nothing to change, nothing refused.
    const same = [{ path: DROP_IN("90-ops.yaml"), text: "etcd-snapshot-retention: 5\n" }];
    assert.deepEqual(
      planConfig(rendered(1), found21({ dropIns: same }), "sza122021.local").changedKeys,
      [],
    );
  });

  it("refuses a node-name a drop-in sets that differs from the stack's", () => {
    const dropIns = [{ path: DROP_IN("50-name.yaml"), text: "node-name: other-21\n" }];
    const plan = () =>
      planConfig(rendered(1), found21({ dropIns, holdsEtcdData: false }), "sza122021.local");
    assert.throws(
      plan,
      /node-name is "other-21" \(\/etc\/rancher\/rke2\/config\.yaml\.d\/50-name\.yaml\)/,
    );
  });

  it("matches a token from token-file, a drop-in or RKE2_TOKEN, and adds no token: line", () => {
    const ok = [
      found21(
        {},
        without(handWritten("sza122021.local"), "token") + "token-file: /etc/rke2/token\n",
      ),
      found21(
        { dropIns: [{ path: DROP_IN("10-token.yaml"), text: `token: ${TOKEN}\n` }] },
        without(handWritten("sza122021.local"), "token"),
      ),
      found21(
        {
          environment: [{ path: "/etc/default/rke2-server", variables: { RKE2_TOKEN: PASSWORD } }],
        },
        without(handWritten("sza122021.local"), "token"),
      ),
    ];
    ok[0] = {
      ...ok[0],
      tokenFiles: [
        { path: "/etc/rke2/token", sha256: sha256(TOKEN), passwordSha256: sha256(PASSWORD) },
      ],
    };
    for (const f of ok)
      assert.deepEqual(planConfig(rendered(1), f, "sza122021.local").changedKeys, []);
    // A token file holding another cluster's token, or one that cannot be read, is refused.
    const other = `K10${"cd".repeat(32)}::server:another`;
    assert.throws(
      () =>
        planConfig(
          rendered(1),
          {
            ...ok[0],
            tokenFiles: [
              { path: "/etc/rke2/token", sha256: sha256(other), passwordSha256: sha256("another") },
            ],
          },
          "sza122021.local",
        ),
      (err: Error) =>
        /from \/etc\/rke2\/token\) is not the stack's rke2Token/.test(err.message) &&
        !err.message.includes("another"),
    );
    assert.throws(
      () =>
        planConfig(
          rendered(1),
          { ...ok[0], tokenFiles: [{ path: "/etc/rke2/token", error: "missing" }] },
          "sza122021.local",
        ),
      /sza122021\.local: token-file \/etc\/rke2\/token \(set in \/etc\/rancher\/rke2\/config\.yaml\) does not exist/,
    );
  });

  it("matches a short token on the host with the full token in the stack, and the reverse", () => {
    assert.equal(tokenPassword(TOKEN), PASSWORD);
    assert.equal(tokenPassword(PASSWORD), PASSWORD);
    const short = handWritten("sza122021.local").replace(TOKEN, PASSWORD);
    assert.deepEqual(
      planConfig(rendered(1), found21({}, short), "sza122021.local").changedKeys,
      [],
    );
    assert.deepEqual(
      planConfig(rendered(1, PASSWORD), found21(), "sza122021.local").changedKeys,
      [],
    );
  });

  it("refuses to move a hand-built canal estate to the stack's default CNI, saying which key adopts it", () => {
    const text = without(handWritten("sza122021.local"), "cni");
    assert.throws(
      () => planConfig(rendered(1), found21({}, text), "sza122021.local"),
      /sza122021\.local: cni is "canal" \(RKE2's default for v1\.35\.6\+rke2r1: no file sets it\) and the stack asks for "calico", but a running cluster cannot change cni; set rke2\.cni to "canal" to adopt it\. Nothing was changed\./,
    );
    // A server with no etcd data yet is not a running cluster's: the key is written.
    const fresh = planConfig(
      rendered(1),
      found21({ holdsEtcdData: false }, text),
      "sza122021.local",
    );
    assert.deepEqual(fresh.changedKeys, ["cni"]);
  });

  it("refuses a different cluster-cidr, service-cidr or cluster-domain on a server with etcd data", () => {
    for (const [key, modelKey, value] of [
      ["cluster-cidr", "clusterCidr", "10.99.0.0/16"],
      ["service-cidr", "serviceCidr", "10.98.0.0/16"],
      ["cluster-domain", "clusterDomain", "example.internal"],
    ] as const) {
      assert.throws(
        () =>
          planConfig(
            rendered(1, TOKEN, (c) => {
              c[modelKey] = value;
              if (modelKey === "serviceCidr") c.clusterDnsIp = "10.98.0.10";
            }),
            found21(),
            "sza122021.local",
          ),
        new RegExp(`${key} is .* a running cluster cannot change ${key}`),
      );
    }
  });

  it("counts a key the files leave out as RKE2's default: no restart when the default is the stack's", () => {
    const text = without(
      handWritten("sza122021.local"),
      "service-node-port-range",
      "etcd-snapshot-retention",
    );
    const plan = planConfig(
      rendered(1, TOKEN, (c) => {
        c.nodePortRange = "30000-32767";
      }),
      found21({}, text),
      "sza122021.local",
    );
    assert.deepEqual(plan.changedKeys, []);
    assert.equal(
      plan.sources["service-node-port-range"],
      "RKE2's default for v1.35.6+rke2r1: no file sets it",
    );
  });

  it("refuses to move the address etcd peers on: node-ip on a second address, or left to RKE2", () => {
    const onSecond = handWritten("sza122021.local").replace(
      "node-ip: 192.168.122.21",
      "node-ip: 10.0.0.21",
    );
    assert.throws(
      () =>
        planConfig(rendered(1), found21({ peerAddress: "10.0.0.21" }, onSecond), "sza122021.local"),
      /node-ip is "10\.0\.0\.21" \(\/etc\/rancher\/rke2\/config\.yaml\) and the stack asks for "192\.168\.122\.21", but a running cluster cannot change node-ip; set nodes\[i\]\.ip to "10\.0\.0\.21"/,
    );
    const unset = without(handWritten("sza122021.local"), "node-ip");
    assert.deepEqual(
      planConfig(rendered(1), found21({}, unset), "sza122021.local").changedKeys,
      [],
    );
    assert.throws(
      () => planConfig(rendered(1), found21({ peerAddress: undefined }, unset), "sza122021.local"),
      /node-ip is not set \(no file sets it\)/,
    );
  });

  it("reports the found value of a managed key with its source", () => {
    const plan = planConfig(
      rendered(1),
      found21({
        dropIns: [{ path: DROP_IN("10-cidr.yaml"), text: "cluster-cidr: 10.12.0.0/16\n" }],
      }),
      "sza122021.local",
    );
    assert.equal(plan.sources["cluster-cidr"], DROP_IN("10-cidr.yaml"));
    assert.equal(plan.found["tls-san"] === ABSENT, false);
  });
});

describe("roles and stopped servers", () => {
  const facts: NodeFacts = {
    ...RUNNING_SERVER_FACTS,
    active: false,
    addresses: ["192.168.122.21"],
    ownMembers: { error: "etcd did not answer" },
  };

  const ctx = {
    node: "sza122021.local",
    nodeIp: "192.168.122.21",
    role: "server" as const,
    operation: "create" as const,
    desired: { version: "v1.35.7+rke2r1" },
    config: {
      changedKeys: ["etcd-snapshot-retention"],
      hostNodeName: "sza122021.local",
      dataDir: "/var/lib/rancher/rke2",
    },
    facts,
  };

  it("starts a stopped server with etcd data as it is when first adopted: no write, no install", () => {
    const d = decideStart(ctx);
    assert.deepEqual([d.install, d.writeConfig, d.action], [false, false, "start"]);
    assert.ok(d.reasons.some((r) => /next pulumi up writes those keys/.test(r)));
  });

  it("refuses a node that runs the other RKE2 unit, or an agent that holds etcd data", () => {
    assert.throws(
      () =>
        decideStart({
          ...ctx,
          role: "agent",
          facts: { ...facts, etcdData: false, otherActive: true },
        }),
      /sza122021\.local: the stack declares it an agent, but rke2-server\.service runs there\. Nothing was changed/,
    );
    assert.throws(
      () => decideStart({ ...ctx, role: "agent", facts }),
      /declares it an agent, but it holds a server's etcd data in \/var\/lib\/rancher\/rke2\/server\/db/,
    );
  });
});

describe("a release path for every server", () => {
  it("refuses a mix no single step serves, naming a path from the oldest server", () => {
    const problem = clusterReleaseProblem(
      [
        { node: "s20", version: "v1.35.6+rke2r1" },
        { node: "s21", version: "v1.34.9+rke2r1" },
        { node: "s22", version: "v1.34.9+rke2r1" },
      ],
      "v1.36.1+rke2r1",
    );
    assert.match(
      problem ?? "",
      /the servers run s20 v1\.35\.6\+rke2r1, s21 v1\.34\.9\+rke2r1, s22 v1\.34\.9\+rke2r1: .*Upgrade from the oldest, s21 at v1\.34\.9\+rke2r1, one minor release at a time: set rke2\.version to the latest v1\.35 release \(v1\.35\.6\+rke2r1 or later\), run pulumi up, then v1\.36\.1\+rke2r1$/,
    );
    assert.equal(
      clusterReleaseProblem(
        [
          { node: "s20", version: "v1.35.6+rke2r1" },
          { node: "s21", version: "v1.34.9+rke2r1" },
        ],
        "v1.35.7+rke2r1",
      ),
      undefined,
    );
    assert.match(
      clusterReleaseProblem(
        [
          { node: "s20", version: "v1.35.6+rke2r1" },
          { node: "s21", version: "v1.34.9+rke2r1" },
        ],
        "v1.34.9+rke2r1",
      ) ?? "",
      /would downgrade s20/,
    );
  });
});
