/**
 * The README's "order of operations" picture against the dependency graph the program records
 * under the mock runtime: every edge the picture states is a real wait between those steps,
 * and every wait between steps is stated (directly or through a path of stated edges).
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { estateModel } from "../support/lab-stack";
import { resourcesOf } from "../support/program";
import {
  DownstreamRole,
  EnvironmentModel,
  MANAGEMENT_CLUSTER,
  nodesOfCluster,
  NodeSpec,
  RecordedResource,
  serversOf,
} from "../../components/model";
import { registrationPlan, RegistrationGroup } from "../../components/rancher-cluster";

const README = path.resolve(__dirname, "..", "..", "..", "README.md");
/** The comment line that marks the checked picture among the README's Mermaid blocks. */
const PICTURE_MARKER = "%% order of operations";

/** The steps and edges a Mermaid flowchart states; `A --> B` means B waits for A. */
interface Picture {
  readonly steps: ReadonlyMap<string, string>;
  readonly edges: readonly (readonly [string, string])[];
}

/** Reads the flowchart marked as the order of operations; a line it cannot read fails. */
function readOrderPicture(markdown: string): Picture {
  const block = [...markdown.matchAll(/```mermaid\n([\s\S]*?)```/g)]
    .map((m) => m[1])
    .find((text) => text.includes(PICTURE_MARKER));
  assert.ok(block, `no Mermaid block with the line "${PICTURE_MARKER}" in the README`);
  const steps = new Map<string, string>();
  const edges: [string, string][] = [];
  for (const line of block.split("\n").map((l) => l.trim())) {
    if (line === "" || line.startsWith("%%") || /^flowchart \w+$/.test(line)) continue;
    const ids = line.split("-->").map((part) => {
      const m = /^(\w+)(?:\[([^\]]*)\])?$/.exec(part.trim());
      assert.ok(m, `cannot read "${part.trim()}" in the picture line "${line}"`);
      const [, id, label] = m;
      if (label !== undefined) {
        assert.ok(!steps.has(id) || steps.get(id) === label, `step ${id} has two labels`);
        steps.set(id, label);
      }
      return id;
    });
    for (let i = 1; i < ids.length; i++) edges.push([ids[i - 1], ids[i]]);
  }
  for (const [from, to] of edges)
    for (const id of [from, to])
      assert.ok(steps.has(id), `step ${id} (${from} --> ${to}) has no label`);
  return { steps, edges };
}

/** Which registration group each downstream node is in, as RancherDownstreamCluster orders them. */
function registrationGroups(model: EnvironmentModel): Map<string, RegistrationGroup> {
  const groups = new Map<string, RegistrationGroup>();
  for (const cluster of model.rancher?.downstreamClusters ?? [])
    for (const step of registrationPlan(nodesOfCluster(model, cluster.name)))
      groups.set(step.node.name, step.group);
  return groups;
}

const DOWNSTREAM_STEP: Record<RegistrationGroup, string> = {
  first: "firstGroup",
  etcd: "etcdNodes",
  "control-plane": "controlPlaneNodes",
  worker: "workers",
};

/**
 * The picture's step of every custom resource (what runs), from the resource the program
 * declared it under (its top ancestor) and, inside the clusters, the node it serves. A resource
 * no step claims fails: a new kind of resource needs its place in the picture.
 */
function stepsOf(model: EnvironmentModel, resources: readonly RecordedResource[]) {
  const byUrn = new Map(resources.map((r) => [r.urn, r]));
  const servers = serversOf(model).map((n) => n.name);
  const groups = registrationGroups(model);
  const initNodes = new Set(
    (model.rancher?.downstreamClusters ?? []).map(
      (c) => registrationPlan(nodesOfCluster(model, c.name))[0].node.name,
    ),
  );
  const stepOf = (r: RecordedResource): string => {
    const chain = [r];
    while (chain[0].parent) chain.unshift(byUrn.get(chain[0].parent)!);
    const [top, child] = chain;
    const under = (kind: string) => child.name.slice(`${top.name}-${kind}-`.length);
    const isUnder = (kind: string) => child.name.startsWith(`${top.name}-${kind}-`);
    switch (top.type) {
      case "rke2remediation:libvirt:DnsRecords":
        return "records";
      case "rke2remediation:node:Preparations":
        return "prepare";
      case "rke2remediation:node:ServerPortsPreflight":
        return "ports";
      case "pulumi:providers:kubernetes":
        return "dnsFix";
      case "rke2remediation:dns:ClusterDns":
        if (top.name === `dns-${model.management.name}`) return "dnsFix";
        break;
      case "rke2remediation:dns:UpstreamResolverPreflight":
        return "upstreams";
      case "rke2remediation:rke2:Cluster": {
        if (child.name === `${top.name}-kubeconfig`) return "kubeconfig";
        const kind = ["config", "start", "gate"].find(isUnder);
        if (!kind) break;
        const server = servers.indexOf(under(kind)) + 1;
        if (server === 0) return "agents";
        return kind === "gate" ? `gate${server}` : `server${server}`;
      }
      case "pulumi:providers:rancher2":
        return "cluster";
      case "rke2remediation:rancher:DownstreamCluster": {
        if (child.name === top.name) return "cluster";
        const kind = ["register", "gate", "active", "sync"].find(isUnder);
        if (!kind) break;
        const node = under(kind);
        const waitOrSync = kind === "active" || kind === "sync";
        if (waitOrSync && node === "workers") return "workers";
        if (waitOrSync && initNodes.has(node)) return "firstActive";
        const group = groups.get(node);
        if (group) return DOWNSTREAM_STEP[group];
        break;
      }
    }
    throw new Error(`${r.type} ${r.name} belongs to no step of the picture; give it one`);
  };
  return new Map(resources.filter((r) => r.custom).map((r) => [r.urn, stepOf(r)]));
}

/**
 * The custom resources a resource waits for directly: its dependencies and provider, and those
 * of the components above it (a child registers only after its parent, so it waits for what
 * the parent waits for). A dependency on a component is one on every resource inside it.
 */
function directWaits(resources: readonly RecordedResource[], r: RecordedResource): string[] {
  const byUrn = new Map(resources.map((x) => [x.urn, x]));
  const inside = (urn: string): string[] => {
    const d = byUrn.get(urn)!;
    if (d.custom) return [urn];
    return resources.filter((x) => x.parent === urn).flatMap((x) => inside(x.urn));
  };
  const waits: string[] = [];
  for (let x: RecordedResource | undefined = r; x; x = byUrn.get(x.parent)) {
    const provider = x.provider ? [x.provider.slice(0, x.provider.lastIndexOf("::"))] : [];
    waits.push(...[...x.dependencies, ...provider].flatMap(inside));
  }
  return waits;
}

/** Every wait between two different steps, with one example of the resources behind it. */
function stepWaits(model: EnvironmentModel, resources: readonly RecordedResource[]) {
  const steps = stepsOf(model, resources);
  const edges = new Map<string, string>();
  for (const r of resources.filter((x) => x.custom)) {
    for (const d of directWaits(resources, r)) {
      const [from, to] = [steps.get(d)!, steps.get(r.urn)!];
      const name = (urn: string) => urn.slice(urn.lastIndexOf("::") + 2);
      if (from !== to && !edges.has(`${from} --> ${to}`))
        edges.set(`${from} --> ${to}`, `${name(r.urn)} waits for ${name(d)}`);
    }
  }
  return { steps: new Set(steps.values()), edges };
}

/** Whether the picture states `to` after `from`, by one edge or a path of them. */
function pictureOrders(picture: Picture, from: string, to: string): boolean {
  const reached = new Set([from]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [a, b] of picture.edges)
      if (reached.has(a) && !reached.has(b)) {
        reached.add(b);
        grew = true;
      }
  }
  return reached.has(to);
}

/** Problems between a picture and a recorded graph, each naming the step edge. */
function compare(picture: Picture, real: ReturnType<typeof stepWaits>, everyStep: boolean) {
  const problems: string[] = [];
  for (const [from, to] of picture.edges)
    if (
      !real.edges.has(`${from} --> ${to}`) &&
      (everyStep || (real.steps.has(from) && real.steps.has(to)))
    )
      problems.push(
        `the picture states ${from} --> ${to}, but nothing in ${to} waits directly for ${from}`,
      );
  for (const [edge, example] of real.edges) {
    const [from, to] = edge.split(" --> ");
    if (!pictureOrders(picture, from, to))
      problems.push(`${to} waits for ${from} (${example}), which the picture does not state`);
  }
  for (const step of real.steps)
    if (!picture.steps.has(step)) problems.push(`step ${step} is missing from the picture`);
  if (everyStep)
    for (const step of picture.steps.keys())
      if (!real.steps.has(step)) problems.push(`the picture's step ${step} declares nothing`);
  return problems;
}

const record = (model: EnvironmentModel) =>
  resourcesOf(model, {
    sshPrivateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n"),
    rke2Token: pulumi.secret("K10-order-token"),
  });

/**
 * The seeds' estate with one node of every kind the picture draws: two management agents, and
 * in uat1 a further etcd node, a further control-plane node and two more workers.
 */
function estateWithEveryStep(model: EnvironmentModel): EnvironmentModel {
  const node = (octet: number, cluster: string, roles: NodeSpec["roles"]): NodeSpec => ({
    ...model.nodes[0],
    name: `sza1220${octet}.local`,
    ip: `192.168.122.${octet}`,
    cluster,
    roles,
    ssh: { ...model.nodes[0].ssh, host: `192.168.122.${octet}` },
  });
  const downstream = (octet: number, ...roles: DownstreamRole[]) => node(octet, "uat1", roles);
  return {
    ...model,
    nodes: [
      ...model.nodes,
      node(25, MANAGEMENT_CLUSTER, ["agent"]),
      node(26, MANAGEMENT_CLUSTER, ["agent"]),
      downstream(32, "etcd"),
      downstream(34, "controlplane"),
      downstream(40, "worker"),
      downstream(41, "worker"),
    ],
  };
}

describe("the README's order of operations", function () {
  this.timeout(60000);
  const picture = readOrderPicture(fs.readFileSync(README, "utf8"));
  const lab = estateModel();

  it("states exactly the waits between steps of an estate with every kind of node", async () => {
    const model = estateWithEveryStep(lab);
    assert.deepEqual(compare(picture, stepWaits(model, await record(model)), true), []);
  });

  it("states every wait between steps of the lab stack as it is", async () => {
    assert.deepEqual(compare(picture, stepWaits(lab, await record(lab)), false), []);
  });

  it("with the fix delivered through the Kubernetes API, the first server does not wait for it", async () => {
    const model = {
      ...lab,
      management: { ...lab.management, dnsDelivery: "helmChartConfig" as const },
    };
    const { edges } = stepWaits(model, await record(model));
    assert.ok(!edges.has("dnsFix --> server1"), edges.get("dnsFix --> server1"));
    assert.ok(edges.has("prepare --> dnsFix"));
  });

  it("fails on a stated edge the program does not have, and on a wait the picture omits", async () => {
    const model = estateWithEveryStep(lab);
    const real = stepWaits(model, await record(model));
    const wrong: Picture = {
      steps: picture.steps,
      edges: [
        ...picture.edges.filter(([a, b]) => !(a === "dnsFix" && b === "server1")),
        ["gate3", "dnsFix"],
      ],
    };
    assert.deepEqual(compare(wrong, real, true), [
      "the picture states gate3 --> dnsFix, but nothing in dnsFix waits directly for gate3",
      `server1 waits for dnsFix (${real.edges.get("dnsFix --> server1")}), which the picture does not state`,
    ]);
  });
});
