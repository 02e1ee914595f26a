import * as assert from "assert/strict";
import { rancherRegistrationsUseAllowedRancher as policy } from "../../policy/policies/rancher-registrations-use-allowed-rancher";
import type { RecordedResource } from "../../components/model";
import { estateModel, estateRawConfig } from "../support/lab-stack";
import { resourcesOf, TEST_SECRETS } from "../support/program";
import { configuredViolations, policyPackConfig } from "./util";

const violations = (resources: RecordedResource[], file: unknown) =>
  configuredViolations(policy, resources, file);

/**
 * The compliant fixture is what the program registers for the seeds' whole estate: uat1 created
 * in, and its two nodes registered with, the Rancher at https://ai-ear.cn. Each case changes the
 * pack's config, or one field of the stack config.
 */
function estate(rancherUrl?: string): Promise<RecordedResource[]> {
  const raw = estateRawConfig();
  const rancher = (raw.values as { rancher: Record<string, unknown> }).rancher;
  if (rancherUrl !== undefined) rancher.url = rancherUrl;
  return resourcesOf(estateModel(raw), TEST_SECRETS);
}

const allowing = (...hosts: string[]) => ({ [policy.name]: { allowedRancherHosts: hosts } });

describe("policy rancher-registrations-use-allowed-rancher", () => {
  it("allows any Rancher when the pack's config lists none (its default)", async () => {
    assert.deepEqual(await violations(await estate(), {}), []);
  });

  it("accepts registrations and the provider at an allowed Rancher host, in any case", async () => {
    assert.deepEqual(await violations(await estate(), allowing("AI-EAR.cn")), []);
  });

  it("refuses the provider and every registration of a Rancher the config does not list", async () => {
    const found = await violations(await estate(), allowing("rancher.example.com"));
    assert.equal(found.length, 3, found.join("\n"));
    assert.ok(
      found.some((m) =>
        /^mandatory the rancher2 provider rancher uses the Rancher at https:\/\/ai-ear\.cn/.test(m),
      ),
      found.join("\n"),
    );
    for (const node of ["sza122030.local", "sza122031.local"]) {
      assert.ok(
        found.some((m) =>
          m.startsWith(
            `mandatory ${node}'s registration in cluster uat1 uses the Rancher at https://ai-ear.cn`,
          ),
        ),
        found.join("\n"),
      );
    }
  });

  it("refuses a stack whose rancher.url moved to another host", async () => {
    const found = await violations(
      await estate("https://rancher.example.com"),
      allowing("ai-ear.cn"),
    );
    assert.equal(found.length, 3, found.join("\n"));
    assert.match(found[0], /uses the Rancher at https:\/\/rancher\.example\.com/);
  });

  it("refuses a config entry that is not a host, naming the file and the policy", () => {
    assert.throws(
      () => policyPackConfig(policy, allowing("https://ai-ear.cn/")),
      /policy-config\.json: the config of rancher-registrations-use-allowed-rancher is invalid/,
    );
  });
});
