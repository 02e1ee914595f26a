// The floor of Pulumi's own cost per node: a program shaped like the converge stack (one
// component holding one dynamic resource per node, its provider named by a short `__provider`
// module text as components/ssh/provider-stub.ts writes it; and, as the converge stack checks the
// ports between its three servers once it has them, a component with one dynamic resource on
// each of three servers from 3 nodes on) whose provider does nothing: no SSH, no host, no script.
// Whatever CPU it takes per added node is the work of the Pulumi CLI, its Node.js runtime, gRPC
// and the checkpoint, which the product cannot cut without declaring fewer resources.
// `bash bench/run floor` runs it; its config key `nodes` sets the count, `shape` the layout.
"use strict";
const pulumi = require("@pulumi/pulumi");

const config = new pulumi.Config();
const nodes = config.requireNumber("nodes");
// product: as above. per-node: the layout before NodePreparations, a component per node around
// its step (two resources per node). bare: the steps alone.
const shape = config.get("shape") ?? "product";
if (!["product", "per-node", "bare"].includes(shape)) throw new Error(`unknown shape ${shape}`);

// A module text the dynamic-provider process loads and calls `handler()` on
// (pulumi/pulumi@v3.276.0 sdk/nodejs/cmd/dynamic-provider/index.ts `getProvider`).
const PROVIDER = [
  "exports.handler = () => ({",
  "  async create(inputs) { return { id: inputs.node, outs: inputs }; },",
  "  async read(id, props) { return { id, props }; },",
  "  async diff() { return { changes: false }; },",
  "});",
  "",
].join("\n");

class NoopStep extends pulumi.CustomResource {
  constructor(name, props, opts) {
    super("pulumi-nodejs:dynamic:Resource", name, { __provider: PROVIDER, ...props }, opts);
  }
}

class NoopGroup extends pulumi.ComponentResource {
  constructor(name, indexes, opts) {
    super("rke2remediation:bench:FloorGroup", name, {}, opts);
    this.ready = pulumi
      .all(indexes.map((i) => noopStep(`${name}-${i}`, i, this)))
      .apply((r) => r.every(Boolean));
    this.registerOutputs({ ready: this.ready });
  }
}

function noopStep(name, index, parent) {
  // About the number and kind of inputs the node preparation step records.
  const step = new NoopStep(
    `${name}-host`,
    {
      node: name,
      nodeIp: `10.99.${Math.floor(index / 250)}.${(index % 250) + 1}`,
      connection: {
        host: name,
        port: 22,
        user: "root",
        hostKey: "ssh-ed25519 AAAA" + "x".repeat(64),
      },
      script: "prepare-node.sh@" + "0".repeat(64),
      cluster: "local",
      roles: ["server"],
      cni: "calico",
      kubeProxyMode: "iptables",
      firewallServicesDisabled: true,
      rejectRulesAbsent: true,
      networkManagerConfig: "[keyfile]\nunmanaged-devices=interface-name:kube-ipvs0\n",
    },
    { parent },
  );
  return step.id.apply((id) => id !== "");
}

const indexes = [...Array(nodes).keys()];
const all = [];
if (shape === "product") all.push(new NoopGroup("floor", indexes).ready);
for (const i of shape === "product" ? [] : indexes) {
  all.push(
    shape === "bare"
      ? noopStep(`floor-${i}`, i, undefined)
      : new NoopGroup(`floor-${i}`, [i]).ready,
  );
}
if (shape === "product" && nodes >= 3) {
  for (const i of [0, 1, 2]) all.push(new NoopGroup(`ports-${i}`, [i]).ready);
}
module.exports.ready = pulumi.all(all).apply((r) => r.every(Boolean));
