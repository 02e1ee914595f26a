/**
 * A stack written by the release that held each node's preparation step under a component of its
 * own (`rke2remediation:node:Preparation` named `prepare-<node>`) upgrades in place to one
 * `NodePreparations` component: `pulumi up` of that release's tree (read from git history, as a
 * clean clone has it) prepares the lab's nodes, then this checkout's preview and `up` must keep
 * every host step (same id, nothing run on a host) and only drop the empty per-node components.
 */
import * as assert from "assert/strict";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { NODE_PREPARATION } from "../../components/model";
import { pulumiIn, pulumiOn, treeAt } from "./cli";
import { LAB_STACK, lab, nodeFile, operatorKey, REPO, ruleset } from "../real/lab";

const NS = "rke2-remediation";
const STACK = "upgrade";
/** The last commit whose program declared a component per node around its preparation step. */
const FORMER_MAIN = "4fa587d";
const PER_NODE_COMPONENT = "rke2remediation:node:Preparation";
const NM_DROP_IN = "/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf";

const pulumi = (...args: string[]) => pulumiOn(STACK, args);

/** The lab's nodes (as `lab up` wrote its stack), by octet. */
function labNodes(): { octet: number; name: string }[] {
  const file = path.join(REPO, "stacks", `Pulumi.${LAB_STACK}.yaml`);
  const config = (YAML.parse(fs.readFileSync(file, "utf8")) as { config: Record<string, unknown> })
    .config;
  return (config[`${NS}:nodes`] as { name: string; ip: string }[]).map((n) => ({
    octet: Number(n.ip.split(".")[3]),
    name: n.name,
  }));
}

/**
 * This lab's stack as its own stack, preparing nodes only: the lab's nodes and host keys, no
 * libvirt records, RKE2 or Rancher; the SSH key set as a secret, a token of its own.
 */
function preparationStack(dirs: readonly string[]): void {
  const lab = YAML.parse(
    fs.readFileSync(path.join(REPO, "stacks", `Pulumi.${LAB_STACK}.yaml`), "utf8"),
  ) as { config: Record<string, unknown> };
  const config = Object.fromEntries(
    Object.entries(lab.config).filter(
      ([, v]) => !(typeof v === "object" && v !== null && "secure" in v),
    ),
  );
  config[`${NS}:deploy`] = {
    libvirtDnsRecords: false,
    nodePreparation: true,
    rke2Servers: false,
    clusterDns: false,
    rancherClusters: false,
  };
  pulumi("stack", "rm", "--yes", "--force");
  const file = path.join(REPO, "stacks", `Pulumi.${STACK}.yaml`);
  fs.rmSync(file, { force: true });
  const init = pulumi("stack", "init");
  assert.equal(init.status, 0, init.out);
  const salt = (YAML.parse(fs.readFileSync(file, "utf8")) as { encryptionsalt?: string })
    .encryptionsalt;
  fs.writeFileSync(file, YAML.stringify({ ...(salt ? { encryptionsalt: salt } : {}), config }));
  for (const [name, value] of [
    ["sshPrivateKey", operatorKey()],
    ["rke2Token", crypto.randomBytes(18).toString("base64url")],
  ]) {
    const set = pulumiOn(STACK, ["config", "set", "--secret", name], value);
    assert.equal(set.status, 0, set.out);
  }
  for (const dir of dirs) fs.copyFileSync(file, path.join(dir, "stacks", `Pulumi.${STACK}.yaml`));
}

interface StateResource {
  readonly urn: string;
  readonly type: string;
  readonly id?: string;
  readonly parent?: string;
}

function stateResources(): StateResource[] {
  const r = pulumi("stack", "export");
  assert.equal(r.status, 0, r.out);
  const json = r.out.slice(r.out.indexOf("{"), r.out.lastIndexOf("}") + 1);
  return (JSON.parse(json) as { deployment: { resources: StateResource[] } }).deployment.resources;
}

const nameOf = (urn: string) => urn.split("::").pop()!;

/** What each node's host shows of its preparation: iptables rules, the drop-in, the units' calls. */
function hostFacts(octet: number): string {
  const calls = nodeFile(octet, "/var/lib/systemctl-double/calls.log");
  return JSON.stringify({
    rules: ruleset(octet),
    dropIn: fs.existsSync(nodeFile(octet, NM_DROP_IN))
      ? fs.readFileSync(nodeFile(octet, NM_DROP_IN), "utf8")
      : null,
    systemctlCalls: fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").split("\n").length : 0,
  });
}

describe("a stack written with a component per prepared node (state upgrade)", function () {
  this.timeout(600000);
  let former: string;
  let nodes: { octet: number; name: string }[];
  let formerState: StateResource[];
  let facts: Map<number, string>;

  before(() => {
    nodes = labNodes();
    for (const { octet } of nodes) {
      const reset = lab("reset-node", String(octet));
      assert.equal(reset.status, 0, reset.stderr);
    }
    former = treeAt(FORMER_MAIN);
    preparationStack([former]);
    const up = pulumiIn(former, STACK, ["up", "--yes"]);
    assert.equal(up.status, 0, up.out);
    formerState = stateResources();
    facts = new Map(nodes.map(({ octet }) => [octet, hostFacts(octet)]));
  });
  after(() => {
    pulumi("stack", "rm", "--yes", "--force");
    fs.rmSync(path.join(REPO, "stacks", `Pulumi.${STACK}.yaml`), { force: true });
    if (former) fs.rmSync(former, { recursive: true, force: true });
  });

  it("the former release's state holds each node's step under its own component", () => {
    const components = formerState.filter((r) => r.type === PER_NODE_COMPONENT);
    assert.deepEqual(
      components.map((r) => nameOf(r.urn)).sort(),
      nodes.map((n) => `prepare-${n.name}`).sort(),
    );
    for (const step of formerState.filter((r) => r.type === NODE_PREPARATION.token)) {
      const parent = components.find((c) => c.urn === step.parent);
      assert.ok(parent, `${step.urn} has no per-node component`);
      assert.equal(`${nameOf(parent.urn)}-host`, nameOf(step.urn));
    }
  });

  it("pulumi preview keeps every host step and plans only the components' change", () => {
    const r = pulumi("preview", "--json");
    assert.equal(r.status, 0, r.out);
    const json = r.out.slice(r.out.indexOf("{"), r.out.lastIndexOf("}") + 1);
    const steps = (JSON.parse(json) as { steps: { op: string; urn: string }[] }).steps;
    const changing = steps
      .filter((s) => s.op !== "same")
      .map((s) => `${s.op} ${s.urn.split("::").slice(-2).join("::")}`)
      .sort();
    // Nothing for a host step (no create, update, replace or delete): the new component, and
    // the per-node ones deleted.
    assert.deepEqual(changing, [
      "create rke2remediation:node:Preparations::prepare",
      ...nodes.map((n) => `delete ${PER_NODE_COMPONENT}::prepare-${n.name}`).sort(),
    ]);
    // (The JSON lists no step for a resource that stays as it is: the host steps are not there.)
  });

  it("pulumi up keeps each step's id, runs nothing on a host, and the drift check is clean after", () => {
    const r = pulumi("up", "--yes");
    assert.equal(r.status, 0, r.out);
    const upgraded = stateResources();
    assert.deepEqual(
      upgraded.filter((x) => x.type === PER_NODE_COMPONENT),
      [],
    );
    const [component] = upgraded.filter((x) => x.type === "rke2remediation:node:Preparations");
    const formerIds = new Map(
      formerState
        .filter((x) => x.type === NODE_PREPARATION.token)
        .map((x) => [nameOf(x.urn), x.id]),
    );
    const steps = upgraded.filter((x) => x.type === NODE_PREPARATION.token);
    assert.equal(steps.length, nodes.length);
    for (const step of steps) {
      assert.equal(step.parent, component.urn);
      assert.equal(step.id, formerIds.get(nameOf(step.urn)), `${step.urn} has a new id`);
    }
    for (const { octet } of nodes) assert.equal(hostFacts(octet), facts.get(octet), `.${octet}`);
    const drift = pulumi("preview", "--refresh", "--expect-no-changes");
    assert.equal(drift.status, 0, drift.out);
  });
});
