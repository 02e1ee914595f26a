// The floor of Pulumi's own cost per node: a program shaped like the product's node preparation
// (per node, one component resource with one dynamic resource under it, its provider named by a
// short `__provider` module text as components/ssh/provider-stub.ts writes it) whose provider
// does nothing: no SSH, no host, no script. Whatever CPU it takes per added node is the work of
// the Pulumi CLI, its Node.js runtime, gRPC and the checkpoint, which the product cannot cut
// without declaring fewer resources. `bash bench/run floor` runs it; its config key `nodes` sets
// the count.
"use strict";
const pulumi = require("@pulumi/pulumi");

const config = new pulumi.Config();
const nodes = config.requireNumber("nodes");
// `bare: true` leaves the component out: one resource per node instead of two.
const bare = config.getBoolean("bare") ?? false;

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

class NoopNode extends pulumi.ComponentResource {
  constructor(name, index, opts) {
    super("rke2remediation:bench:FloorNode", name, {}, opts);
    this.ready = noopStep(name, index, this);
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

const all = [];
for (let i = 0; i < nodes; i++) {
  all.push(bare ? noopStep(`floor-${i}`, i, undefined) : new NoopNode(`floor-${i}`, i).ready);
}
module.exports.ready = pulumi.all(all).apply((r) => r.every(Boolean));
