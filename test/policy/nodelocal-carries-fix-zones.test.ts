import { ANNOTATIONS } from "../../components/cluster-dns/manifests";
import { nodeLocalCarriesFixZones as policy } from "../../policy/policies/nodelocal-carries-fix-zones";
import type { RecordedResource } from "../../components/model";
import { assertNoViolations, assertViolation } from "./util";
import { compliantValues, helmChartConfig } from "./dns-fixture";
import { clusterV2 } from "./rancher-fixture";

/** The compliant HelmChartConfig with its RKE2 release annotation set (or, undefined, removed). */
function withRelease(release: string | undefined): RecordedResource {
  const resource = helmChartConfig(compliantValues());
  const annotations = (resource.inputs.metadata as { annotations: Record<string, string> })
    .annotations;
  if (release === undefined) delete annotations[ANNOTATIONS.rke2Version];
  else annotations[ANNOTATIONS.rke2Version] = release;
  return resource;
}

describe("policy nodelocal-carries-fix-zones", () => {
  it("accepts extraClusterDomains with local and ai-ear.cn on a release whose chart reads them", async () => {
    await assertNoViolations(policy, [helmChartConfig(compliantValues())]);
  });

  it("flags a missing `local`, which sends *.local past CoreDNS again", async () => {
    const values = compliantValues();
    values.nodelocal = { ...values.nodelocal!, extraClusterDomains: ["ai-ear.cn"] };
    await assertViolation(policy, [helmChartConfig(values)], /lacks local:/);
  });

  it("flags a missing static host zone", async () => {
    const values = compliantValues();
    values.nodelocal = { ...values.nodelocal!, extraClusterDomains: ["local"] };
    await assertViolation(policy, [helmChartConfig(values)], /lacks ai-ear\.cn:/);
  });

  it("flags the same values on v1.35.6+rke2r1, whose chart 1.46.002 ignores extraClusterDomains", async () => {
    await assertViolation(
      policy,
      [withRelease("v1.35.6+rke2r1")],
      /rke2-coredns 1\.46\.002 \(RKE2 v1\.35\.6\+rke2r1\) renders sends ai-ear\.cn, local to the node's upstream resolvers.*Use RKE2 v1\.35\.7\+rke2r1 or later/,
    );
  });

  it("accepts the same values on v1.36.3+rke2r1, whose chart 1.46.201 reads them", async () => {
    await assertNoViolations(policy, [withRelease("v1.36.3+rke2r1")]);
  });

  it("flags a release the table does not know, naming the table's module", async () => {
    await assertViolation(
      policy,
      [withRelease("v1.35.99+rke2r1")],
      /v1\.35\.99\+rke2r1 is not in the release table \(components\/cluster-dns\/chart-releases\.ts\)/,
    );
  });

  it("flags a configuration that does not state its release", async () => {
    await assertViolation(
      policy,
      [withRelease(undefined)],
      /does not state its RKE2 release \(annotation rke2-remediation\.io\/rke2-version\)/,
    );
  });

  it("judges Rancher chartValues by the ClusterV2's kubernetesVersion", async () => {
    await assertNoViolations(policy, [clusterV2()]);
    const old = clusterV2();
    (old.inputs as Record<string, unknown>).kubernetesVersion = "v1.34.9+rke2r1";
    await assertViolation(policy, [old], /rke2-coredns 1\.46\.002.*Use RKE2 v1\.34\.10\+rke2r1/);
  });
});
