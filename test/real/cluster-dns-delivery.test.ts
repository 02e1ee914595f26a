/**
 * Delivery of the DNS fix to a standalone RKE2 server (a manifest in its manifests directory,
 * over real SSH) and the live preflight of upstream resolvers (seed 004), against lab hosts.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import { DNS_MANIFEST_PATH } from "../../components/cluster-dns";
import {
  remoteFileProvider,
  RemoteFileState,
  rke2FactsScriptRef,
} from "../../components/remote-file";
import {
  upstreamPreflightProvider,
  UpstreamPreflightState,
} from "../../components/cluster-dns/preflight";
// The SDK's own reader of the configuration the engine hands dynamic providers.
import { Config } from "@pulumi/pulumi/cmd/dynamic-provider/config";
import { hostProvider } from "../../components/host-providers";
import { nodeConnection, nodeFile, operatorKey, stepKey } from "./lab";

const NODE = 20;

function file(content: string): RemoteFileState {
  const { privateKey: _key, ...connection } = nodeConnection(NODE);
  return {
    host: "sza122020.local",
    connection,
    ...stepKey(),
    script: componentFile(path.join(__dirname, "../../components/remote-file"), "remote-file.sh"),
    path: DNS_MANIFEST_PATH,
    content,
    mode: "0600",
    present: true,
    retainOnDelete: true,
  };
}

function preflight(upstreams: string[]): UpstreamPreflightState {
  const { privateKey: _key, ...connection } = nodeConnection(NODE);
  return {
    node: "sza122020.local",
    connection,
    ...stepKey(),
    script: componentFile(
      path.join(__dirname, "../../components/cluster-dns"),
      "preflight-upstreams.sh",
    ),
    upstreams,
    silent: [],
  };
}

describe("cluster DNS delivery and upstream preflight (lab hosts)", function () {
  this.timeout(120000);
  const manifest =
    "apiVersion: helm.cattle.io/v1\nkind: HelmChartConfig\nmetadata:\n  name: rke2-coredns\n";
  const onHost = nodeFile(NODE, DNS_MANIFEST_PATH);

  it("writes the manifest into the server's manifests directory with mode 0600 and nothing else", async () => {
    const { outs } = await remoteFileProvider.create!(file(manifest));
    assert.equal(fs.readFileSync(onHost, "utf8"), manifest);
    assert.equal(fs.statSync(onHost).mode & 0o777, 0o600);
    assert.deepEqual(fs.readdirSync(path.dirname(onHost)), [path.basename(onHost)]);
    assert.equal((outs as RemoteFileState).content, manifest);
  });

  it("writes the manifest under the data-dir a drop-in sets, where RKE2 applies manifests", async () => {
    const dropIn = nodeFile(NODE, "/etc/rancher/rke2/config.yaml.d/10-data-dir.yaml");
    fs.mkdirSync(path.dirname(dropIn), { recursive: true });
    fs.writeFileSync(dropIn, "data-dir: /var/lib/rke2-data\n");
    const moved = nodeFile(NODE, "/var/lib/rke2-data/server/manifests/rke2-remediation-dns.yaml");
    try {
      await remoteFileProvider.create!({
        ...file(manifest),
        rke2FactsScript: rke2FactsScriptRef(),
      });
      assert.equal(fs.readFileSync(moved, "utf8"), manifest);
      assert.equal(fs.statSync(moved).mode & 0o777, 0o600);
    } finally {
      fs.rmSync(dropIn);
      fs.rmSync(nodeFile(NODE, "/var/lib/rke2-data"), { recursive: true, force: true });
    }
  });

  it("sees a hand edit on refresh and restores the file on update", async () => {
    fs.writeFileSync(onHost, "edited by hand\n");
    const read = (await remoteFileProvider.read!("id", file(manifest))).props as RemoteFileState;
    assert.equal(read.content, "edited by hand\n");
    assert.equal((await remoteFileProvider.diff!("id", read, file(manifest))).changes, true);
    await remoteFileProvider.update!("id", read, file(manifest));
    assert.equal(fs.readFileSync(onHost, "utf8"), manifest);
  });

  it("sees a deleted file and writes it again", async () => {
    fs.rmSync(onHost);
    const read = (await remoteFileProvider.read!("id", file(manifest))).props as RemoteFileState;
    assert.equal(read.present, false);
    assert.equal((await remoteFileProvider.diff!("id", read, file(manifest))).changes, true);
    await remoteFileProvider.update!("id", read, file(manifest));
    assert.equal(fs.readFileSync(onHost, "utf8"), manifest);
  });

  it("passes an upstream that answers a random in-addr.arpa HINFO query", async () => {
    const { outs } = await upstreamPreflightProvider.create!(preflight(["192.168.122.1"]));
    assert.deepEqual((outs as UpstreamPreflightState).silent, []);
  });

  it("connects with a key the stack keeps under another config key, read as the dynamic-provider process reads config", async () => {
    const provider = hostProvider("upstreamPreflight");
    const state = { ...preflight(["192.168.122.1"]), sshKeyConfig: "myorg:sshKey" };
    await provider.configure({
      config: new Config({ "myorg:sshKey": operatorKey() }, "one-server"),
    } as never);
    const { outs } = await provider.create(state);
    assert.deepEqual((outs as UpstreamPreflightState).silent, []);
    // The project's sshPrivateKey is not where this step reads its key.
    await provider.configure({
      config: new Config({ "one-server:sshPrivateKey": operatorKey() }, "one-server"),
    });
    await assert.rejects(provider.create(state), /the stack sets no myorg:sshKey/);
  });

  it("fails on an upstream that stays silent, naming it and seed 004", async () => {
    await assert.rejects(
      upstreamPreflightProvider.create!(preflight(["192.168.122.1", "192.168.122.99"])),
      /192\.168\.122\.99 did not answer a HINFO query .* \(seed 004\)/,
    );
  });
});
