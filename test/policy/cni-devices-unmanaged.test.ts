import { renderUnmanagedDevicesConfig } from "../../components/node-preparation/render";
import { DEFAULT_UNMANAGED_DEVICES, NODE_PREPARATION } from "../../components/model";
import { cniDevicesUnmanaged } from "../../policy/policies/cni-devices-unmanaged";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy cni-devices-unmanaged", () => {
  const props = (devices: readonly string[], cni = "calico", kubeProxyMode = "ipvs") => ({
    node: "sza122020.local",
    cni,
    kubeProxyMode,
    networkManagerConfig: renderUnmanagedDevicesConfig(devices),
  });

  it("accepts the default list for calico in IPVS mode", async () => {
    await assertNoViolations(cniDevicesUnmanaged, [
      resource(NODE_PREPARATION.token, props(DEFAULT_UNMANAGED_DEVICES)),
    ]);
  });

  it("rejects a calico node whose list lacks tunl*", async () => {
    const devices = DEFAULT_UNMANAGED_DEVICES.filter((d) => d !== "tunl*");
    await assertViolation(
      cniDevicesUnmanaged,
      [resource(NODE_PREPARATION.token, props(devices))],
      /tunl\*/,
    );
  });

  it("rejects a cilium node whose list has only calico's devices", async () => {
    await assertViolation(
      cniDevicesUnmanaged,
      [
        resource(
          NODE_PREPARATION.token,
          props(["kube-ipvs0", "cali*", "vxlan.calico", "tunl*"], "cilium"),
        ),
      ],
      /cilium\*, lxc\*/,
    );
  });

  it("asks flannel nodes for flannel* only", async () => {
    await assertNoViolations(cniDevicesUnmanaged, [
      resource(NODE_PREPARATION.token, props(["flannel*"], "flannel", "iptables")),
    ]);
    await assertViolation(
      cniDevicesUnmanaged,
      [resource(NODE_PREPARATION.token, props(["kube-ipvs0"], "flannel", "iptables"))],
      /flannel\*/,
    );
  });
});
