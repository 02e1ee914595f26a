import { DEFAULT_UNMANAGED_DEVICES, NODE_PREPARATION } from "../../components/model";
import { renderUnmanagedDevicesConfig } from "../../components/node-preparation/render";
import { networkManagerLeavesKubeIpvs0Alone as policy } from "../../policy/policies/networkmanager-leaves-kube-ipvs0-alone";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy networkmanager-leaves-kube-ipvs0-alone", () => {
  const props = (devices: readonly string[], kubeProxyMode = "ipvs") => ({
    node: "sza122020.local",
    kubeProxyMode,
    networkManagerConfig: renderUnmanagedDevicesConfig(devices),
  });
  const withoutIpvs = DEFAULT_UNMANAGED_DEVICES.filter((d) => d !== "kube-ipvs0");

  it("accepts the default unmanaged list", async () => {
    await assertNoViolations(policy, [
      resource(NODE_PREPARATION.token, props(DEFAULT_UNMANAGED_DEVICES)),
    ]);
  });

  it("rejects a list without kube-ipvs0 under IPVS kube-proxy", async () => {
    await assertViolation(
      policy,
      [resource(NODE_PREPARATION.token, props(withoutIpvs))],
      /kube-ipvs0 holds every ClusterIP/,
    );
  });

  it("rejects a config without the [keyfile] section", async () => {
    const p = {
      ...props(DEFAULT_UNMANAGED_DEVICES),
      networkManagerConfig: "unmanaged-devices=interface-name:kube-ipvs0",
    };
    await assertViolation(policy, [resource(NODE_PREPARATION.token, p)], /kube-ipvs0/);
  });

  it("does not ask for kube-ipvs0 when kube-proxy runs in iptables mode", async () => {
    await assertNoViolations(policy, [
      resource(NODE_PREPARATION.token, props(withoutIpvs, "iptables")),
    ]);
  });
});
