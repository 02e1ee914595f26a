/**
 * The check before the DNS fix's server manifest, over real SSH on a lab server: files an
 * operator put in the manifests directory (in subdirectories too) that define HelmChartConfig
 * kube-system/rke2-coredns stop the delivery, named; files RKE2 would not apply (a `.skip`
 * anywhere in the tree with the file's name, a dotfile, another extension) and the fix's own file
 * do not; the directory is the one under the data-dir a drop-in sets.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as path from "path";
import { componentFile } from "../../components/assets";
import { DNS_MANIFEST_PATH } from "../../components/cluster-dns";
import {
  ManifestCheckState,
  manifestCheckProvider,
} from "../../components/cluster-dns/manifest-check-provider";
import { rke2FactsScriptRef } from "../../components/remote-file";
import { filesUnder, nodeConnection, nodeFile, stepKey } from "./lab";

const NODE = 21;
const MANIFESTS = "/var/lib/rancher/rke2/server/manifests";

/** An operator's own HelmChartConfig rke2-coredns, as written by hand. */
const OPERATOR_CONFIG = fs.readFileSync(
  path.join(__dirname, "..", "..", "..", "test", "fixtures", "operator-rke2-coredns.yaml"),
  "utf8",
);

function check(own: string): ManifestCheckState {
  const { privateKey: _key, ...connection } = nodeConnection(NODE);
  return {
    node: "sza122021.local",
    connection,
    ...stepKey(),
    script: componentFile(
      path.join(__dirname, "../../components/cluster-dns"),
      "manifest-facts.sh",
    ),
    own,
    rke2FactsScript: rke2FactsScriptRef(),
    conflicts: [],
  };
}

/** Writes files on the lab server, relative to `dir` (a path on the host). */
function put(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    const onHost = nodeFile(NODE, path.join(dir, name));
    fs.mkdirSync(path.dirname(onHost), { recursive: true });
    fs.writeFileSync(onHost, text);
  }
}

/** Every file under the server's RKE2 config and data-dirs: path, mtime and size. */
const snapshot = () => filesUnder(NODE, ["/etc/rancher/rke2", MANIFESTS, "/var/lib/rke2-data"]);

describe("DNS manifest conflicts (lab server, real SSH)", function () {
  this.timeout(120000);
  const cleanUp = () => {
    fs.rmSync(nodeFile(NODE, MANIFESTS), { recursive: true, force: true });
    fs.rmSync(nodeFile(NODE, "/var/lib/rke2-data"), { recursive: true, force: true });
    fs.rmSync(nodeFile(NODE, "/etc/rancher/rke2/config.yaml.d/10-data-dir.yaml"), { force: true });
  };
  beforeEach(cleanUp);
  after(cleanUp);

  it("passes a server with no manifests directory, and one with only RKE2's own and the fix's", async () => {
    await manifestCheckProvider.create!(check(""));
    put(MANIFESTS, {
      // RKE2's packaged component: a HelmChart rke2-coredns, not a HelmChartConfig.
      "rke2-coredns.yaml": OPERATOR_CONFIG.replace("kind: HelmChartConfig", "kind: HelmChart"),
      "rke2-remediation-dns.yaml": OPERATOR_CONFIG,
    });
    const { outs } = await manifestCheckProvider.create!(check(DNS_MANIFEST_PATH));
    assert.deepEqual((outs as ManifestCheckState).conflicts, []);
  });

  it("stops on an operator's HelmChartConfig in a subdirectory, naming the server and the file", async () => {
    put(MANIFESTS, { "ops/dns/rke2-coredns-config.yaml": OPERATOR_CONFIG });
    await assert.rejects(
      manifestCheckProvider.create!(check(DNS_MANIFEST_PATH)),
      new RegExp(
        `on server sza122021\\.local, RKE2 would also apply\\n  - ${MANIFESTS}/ops/dns/rke2-coredns-config\\.yaml defines HelmChartConfig rke2-coredns in kube-system\\n`,
      ),
    );
    // A refresh records it, so the next preview shows the check as a change.
    const read = await manifestCheckProvider.read!("id", check(DNS_MANIFEST_PATH));
    assert.equal((read.props as ManifestCheckState).conflicts.length, 1);
  });

  it("counts the fix's own file on a server that does not get it (a stale copy)", async () => {
    put(MANIFESTS, { "rke2-remediation-dns.yaml": OPERATOR_CONFIG });
    await assert.rejects(
      manifestCheckProvider.create!(check("")),
      /rke2-remediation-dns\.yaml defines HelmChartConfig/,
    );
  });

  it("leaves what RKE2 would not apply: a .skip of the file's name anywhere, a dotfile, another extension", async () => {
    put(MANIFESTS, {
      "ops/rke2-coredns-config.yaml": OPERATOR_CONFIG,
      // The skip list is keyed by the file's name, wherever the .skip lies.
      "rke2-coredns-config.yaml.skip": "",
      ".rke2-coredns-old.yaml": OPERATOR_CONFIG,
      "rke2-coredns-config.yaml.bak": OPERATOR_CONFIG,
    });
    const { outs } = await manifestCheckProvider.create!(check(DNS_MANIFEST_PATH));
    assert.deepEqual((outs as ManifestCheckState).conflicts, []);
  });

  it("reads the manifests directory under the data-dir a drop-in sets, and changes nothing on a hand-built server", async () => {
    // A server built by hand: its own node name and token, keys the product does not manage.
    // (A config.yaml an earlier lab step left there is put back afterwards.)
    const configFile = nodeFile(NODE, "/etc/rancher/rke2/config.yaml");
    const earlier = fs.existsSync(configFile) ? fs.readFileSync(configFile) : undefined;
    const restore = () => {
      if (earlier) fs.writeFileSync(configFile, earlier);
      else fs.rmSync(configFile, { force: true });
    };
    try {
      await handBuilt();
    } finally {
      restore();
    }
  });

  async function handBuilt(): Promise<void> {
    put("/etc/rancher/rke2", {
      "config.yaml":
        "node-name: rke2-ops-a\ntoken: ops-own-token-1234\nkubelet-arg: [max-pods=250]\n",
    });
    put("/etc/rancher/rke2/config.yaml.d", {
      "10-data-dir.yaml": "data-dir: /var/lib/rke2-data\n",
    });
    // Under the default data-dir RKE2 no longer reads: not applied, not counted.
    put(MANIFESTS, { "old-coredns.yaml": OPERATOR_CONFIG });
    await manifestCheckProvider.create!(check(DNS_MANIFEST_PATH));
    put("/var/lib/rke2-data/server/manifests", {
      "rke2-remediation-dns.yaml": OPERATOR_CONFIG,
      "coredns.YML": OPERATOR_CONFIG,
    });
    const before = snapshot();
    await assert.rejects(
      manifestCheckProvider.create!(check(DNS_MANIFEST_PATH)),
      (err: Error) =>
        err.message.includes("/var/lib/rke2-data/server/manifests/coredns.YML defines") &&
        !err.message.includes("rke2-data/server/manifests/rke2-remediation-dns.yaml"),
    );
    // Read-only: every file of the server's RKE2 config and data-dirs as it was, none moved.
    assert.deepEqual(snapshot(), before);
    assert.ok(before.some((f) => f.includes("coredns.YML")));
  }
});
