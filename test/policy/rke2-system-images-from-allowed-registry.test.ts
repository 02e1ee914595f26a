import * as assert from "assert/strict";
import { rke2SystemImagesFromAllowedRegistry as policy } from "../../policy/policies/rke2-system-images-from-allowed-registry";
import { RKE2_NODE_START, type RecordedResource } from "../../components/model";
import { estateModel, estateRawConfig } from "../support/lab-stack";
import { resourcesOf, TEST_SECRETS } from "../support/program";
import { configuredViolations, policyPackConfig } from "./util";

const violations = (resources: RecordedResource[], file: unknown) =>
  configuredViolations(policy, resources, file);

const LAB_REGISTRY = "192.168.122.156:30000";

/**
 * The compliant fixture is what the program registers for the seeds' whole estate: the
 * management servers (and the agent) with the lab's private registry, and uat1 given the same
 * registry. Each case changes one field of the stack config.
 */
interface EstateValues {
  nodes: unknown[];
  rke2: Record<string, unknown>;
  rancher: { downstreamClusters: Record<string, unknown>[] };
}

function estate(change: (values: EstateValues) => void = () => {}): Promise<RecordedResource[]> {
  const raw = estateRawConfig();
  const values = raw.values as unknown as EstateValues;
  values.rancher.downstreamClusters[0].privateRegistry = LAB_REGISTRY;
  change(values);
  return resourcesOf(estateModel(raw), TEST_SECRETS);
}

const allowing = (...registries: string[]) => ({
  [policy.name]: { allowedRegistries: registries },
});

describe("policy rke2-system-images-from-allowed-registry", () => {
  it("allows any registry when the pack's config lists none (its default)", async () => {
    const resources = await estate((v) => delete v.rke2.privateRegistry);
    assert.deepEqual(await violations(resources, {}), []);
  });

  it("accepts servers and a downstream cluster that pull from an allowed registry", async () => {
    assert.deepEqual(await violations(await estate(), allowing(LAB_REGISTRY)), []);
  });

  it("checks servers only: an agent takes the registry from its server", async () => {
    const resources = await estate((v) =>
      v.nodes.push({
        name: "sza122023.local",
        ip: "192.168.122.23",
        role: "agent",
        ssh: {
          hostKey:
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLXN6YTEyMjAyMy0tLS0tLS0tLS0t",
        },
      }),
    );
    const agents = resources.filter(
      (r) => r.type === RKE2_NODE_START.token && r.inputs.role === "agent",
    );
    assert.equal(agents.length, 1, "the management cluster has an agent");
    assert.doesNotMatch(String(agents[0].inputs.config), /system-default-registry/);
    assert.deepEqual(await violations(resources, allowing(LAB_REGISTRY)), []);
  });

  it("refuses a management server with another registry, naming the server and the key", async () => {
    const resources = await estate((v) => (v.rke2.privateRegistry = "registry.example.com:5000"));
    const found = await violations(resources, allowing(LAB_REGISTRY));
    assert.equal(found.length, 3, found.join("\n"));
    assert.match(
      found[0],
      /^mandatory sza122020\.local's RKE2 config pulls RKE2's system images from registry\.example\.com:5000, which the policy pack's config does not allow \(allowedRegistries: 192\.168\.122\.156:30000\).*Set rke2\.privateRegistry/,
    );
  });

  it("counts a server without system-default-registry as pulling from docker.io", async () => {
    const resources = await estate((v) => delete v.rke2.privateRegistry);
    const found = await violations(resources, allowing(LAB_REGISTRY));
    assert.equal(found.length, 3, found.join("\n"));
    assert.match(found[0], /from docker\.io \(it sets no system-default-registry\)/);
    assert.deepEqual(await violations(resources, allowing(LAB_REGISTRY, "docker.io")), []);
  });

  it("refuses a downstream cluster whose machines pull from elsewhere, naming the cluster", async () => {
    const resources = await estate((v) => delete v.rancher.downstreamClusters[0].privateRegistry);
    const found = await violations(resources, allowing(LAB_REGISTRY));
    assert.equal(found.length, 1, found.join("\n"));
    assert.match(
      found[0],
      /^mandatory Rancher cluster uat1 pulls RKE2's system images from docker\.io/,
    );
  });

  it("compares registry hosts without regard to case", async () => {
    const resources = await estate((v) => {
      v.rke2.privateRegistry = "Registry.Example.com:5000";
      v.rancher.downstreamClusters[0].privateRegistry = "registry.example.com:5000";
    });
    assert.deepEqual(await violations(resources, allowing("REGISTRY.example.com:5000")), []);
  });

  it("refuses a config entry that is not host[:port], naming the file and the policy", () => {
    assert.throws(
      () => policyPackConfig(policy, allowing("https://r.example.com")),
      /policy-config\.json: the config of rke2-system-images-from-allowed-registry is invalid/,
    );
  });
});
