import { dnsEgressPolicyIsAnAllowance as policy } from "../../policy/policies/dns-egress-policy-is-an-allowance";
import {
  dnsEgressNetworkPolicyObject,
  renderManifests,
} from "../../components/cluster-dns/manifests";
import {
  DNS_EGRESS_CHECK,
  DNS_EGRESS_SSH_CHECK,
  RKE2_MANIFESTS_DIR,
  NETWORK_POLICY_TYPE,
  REMOTE_FILE,
} from "../../components/model";
import type { DnsPolicyNamespace, RecordedResource } from "../../components/model";
import * as assert from "assert/strict";
import { cluster, model } from "./dns-fixture";
import {
  assertNoViolations,
  assertViolation,
  configuredViolations,
  policyPackConfig,
  resource,
} from "./util";

function check(namespaces: DnsPolicyNamespace[], type = DNS_EGRESS_CHECK.token): RecordedResource {
  return resource(type, { cluster: "management", namespaces, refusals: [] }, "dns-egress-check");
}

function dnsPolicy(namespace: string, deps: RecordedResource[]): RecordedResource {
  return {
    ...resource(
      NETWORK_POLICY_TYPE,
      dnsEgressNetworkPolicyObject(namespace, model.dns, cluster),
      `dns-egress-${namespace}`,
    ),
    dependencies: deps.map((d) => d.urn),
  };
}

describe("policy dns-egress-policy-is-an-allowance", () => {
  describe("its config, protectedNamespaces, as a --policy-pack-config file sets it", () => {
    const isolated = () => {
      const guard = check([{ name: "monitoring", isolate: true }]);
      return [guard, dnsPolicy("monitoring", [guard])];
    };
    const messages = (file: unknown) => configuredViolations(policy, isolated(), file);

    it("protects no namespace of the estate's by default", async () => {
      assert.deepEqual(await messages({}), []);
    });

    it("refuses isolating a namespace it lists, at the policy's own level", async () => {
      const config = { [policy.name]: { protectedNamespaces: ["monitoring"] } };
      const found = await messages(config);
      assert.equal(found.length, 1, found.join("\n"));
      assert.match(
        found[0],
        /^mandatory dns-egress-check opts monitoring in to isolation, which the policy pack's config protects \(protectedNamespaces\)/,
      );
    });

    it("takes the level and the list from one object", async () => {
      const config = {
        [policy.name]: { enforcementLevel: "advisory", protectedNamespaces: ["monitoring"] },
      };
      assert.match((await messages(config))[0], /^advisory /);
    });

    it("refuses a list that is not one, naming the file and the policy", () => {
      assert.throws(
        () => policyPackConfig(policy, { [policy.name]: { protectedNamespaces: "monitoring" } }),
        /policy-config\.json: the config of dns-egress-policy-is-an-allowance is invalid: \/protectedNamespaces must be array/,
      );
    });
  });

  const compliant = () => {
    const guard = check([
      { name: "cattle-system", isolate: false },
      { name: "team-a", isolate: true },
    ]);
    return [guard, dnsPolicy("cattle-system", [guard]), dnsPolicy("team-a", [guard])];
  };

  it("accepts policies behind a check, with only a namespace of the stack's own isolated", async () => {
    await assertNoViolations(policy, compliant());
  });

  it("rejects a check that opts cattle-system in to isolation", async () => {
    const guard = check([{ name: "cattle-system", isolate: true }]);
    await assertViolation(
      policy,
      [guard, dnsPolicy("cattle-system", [guard])],
      /opts cattle-system, Rancher's own namespace, in to isolation/,
    );
  });

  it("rejects a server-side check that opts kube-system in to isolation", async () => {
    const guard = check([{ name: "kube-system", isolate: true }], DNS_EGRESS_SSH_CHECK.token);
    await assertViolation(policy, [guard], /opts kube-system, RKE2's own namespace/);
  });

  it("rejects a DNS egress NetworkPolicy that does not wait for a check", async () => {
    const [guard, , teamA] = compliant();
    await assertViolation(
      policy,
      [guard, dnsPolicy("cattle-system", []), teamA],
      /dns-egress-cattle-system delivers allow-dns-egress to cattle-system without depending on a DNS egress check/,
    );
  });

  it("rejects a policy whose check does not cover its namespace", async () => {
    const guard = check([{ name: "team-a", isolate: true }]);
    await assertViolation(
      policy,
      [guard, dnsPolicy("default", [guard])],
      /to default without depending on a DNS egress check/,
    );
  });

  it("rejects a server manifest carrying the policy without a check", async () => {
    const manifest = resource(
      REMOTE_FILE.token,
      {
        path: `${RKE2_MANIFESTS_DIR}/rke2-remediation-dns.yaml`,
        content: renderManifests([dnsEgressNetworkPolicyObject("default", model.dns, cluster)]),
      },
      "dns-manifest",
    );
    await assertViolation(policy, [manifest], /dns-manifest delivers allow-dns-egress to default/);
  });
});
