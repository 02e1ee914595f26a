import { DEFAULT_UNMANAGED_DEVICES } from "../../infra/config/model";
import { renderUnmanagedDevicesConfig } from "../../components/node-preparation/render";
import { networkManagerLeavesKubeIpvs0Alone } from "../../policy/policies/networkmanager-leaves-kube-ipvs0-alone";
import { NODE_PREPARATION_TYPE } from "../../policy/policies/resource-types";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy networkmanager-leaves-kube-ipvs0-alone", () => {
  const props = (devices: readonly string[]) => ({
    node: "sza122020.local",
    networkManagerConfig: renderUnmanagedDevicesConfig(devices),
  });

  it("accepts the default unmanaged list", async () => {
    await assertNoViolations(networkManagerLeavesKubeIpvs0Alone, [
      resource(NODE_PREPARATION_TYPE, props(DEFAULT_UNMANAGED_DEVICES)),
    ]);
  });

  it("rejects a list without kube-ipvs0", async () => {
    const devices = DEFAULT_UNMANAGED_DEVICES.filter((d) => d !== "kube-ipvs0");
    await assertViolation(
      networkManagerLeavesKubeIpvs0Alone,
      [resource(NODE_PREPARATION_TYPE, props(devices))],
      /kube-ipvs0/,
    );
  });

  it("rejects a list without Calico's vxlan device", async () => {
    const devices = DEFAULT_UNMANAGED_DEVICES.filter((d) => d !== "vxlan.calico");
    await assertViolation(
      networkManagerLeavesKubeIpvs0Alone,
      [resource(NODE_PREPARATION_TYPE, props(devices))],
      /vxlan\.calico/,
    );
  });
});
