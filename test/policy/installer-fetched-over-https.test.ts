import { installerFetchedOverHttps as policy } from "../../policy/policies/installer-fetched-over-https";
import { REMOTE_COMMAND_TYPE, RKE2_NODE_START } from "../../components/model";
import { assertNoViolations, assertViolation, resource } from "./util";

describe("policy installer-fetched-over-https", () => {
  for (const command of [
    "curl -sfL https://get.rke2.io | INSTALL_RKE2_VERSION=v1.35.7+rke2r1 sh -",
    "curl -sfL http://mirror.internal/rke2/install.sh -o /root/install.sh",
    "wget -q https://get.rke2.io -O - | sudo bash",
    "curl -sfL https://get.rke2.io | INSTALL_RKE2_ARTIFACT_URL=http://mirror.internal sh -",
  ]) {
    it(`accepts "${command}"`, async () => {
      await assertNoViolations(policy, [
        resource(RKE2_NODE_START.token, { installCommand: command }),
      ]);
    });
  }

  for (const command of [
    "curl -sfL http://get.rke2.io | INSTALL_RKE2_VERSION=v1.35.7+rke2r1 sh -",
    "curl http://192.168.122.156:8080/install.sh | sudo -E bash -s -",
    "wget -qO- http://mirror.internal/install.sh | env INSTALL_RKE2_TYPE=server /bin/sh",
  ]) {
    it(`rejects "${command}" as rke2.installCommand`, async () => {
      await assertViolation(
        policy,
        [resource(RKE2_NODE_START.token, { installCommand: command })],
        /plain http:\/\/ download/,
      );
    });
  }

  it("rejects the same pipe in a remote command's update", async () => {
    await assertViolation(
      policy,
      [
        resource(REMOTE_COMMAND_TYPE, {
          create: "true",
          update: "curl http://x.internal/i.sh | bash",
        }),
      ],
      /https:\/\/get\.rke2\.io/,
    );
  });
});
