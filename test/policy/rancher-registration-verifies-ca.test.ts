import * as assert from "assert/strict";
import { ResourceValidation, unknownCheckingProxy } from "@pulumi/policy";
import { rancherRegistrationVerifiesCa as policy } from "../../policy/policies/rancher-registration-verifies-ca";
import { RANCHER_NODE_REGISTRATION, REMOTE_COMMAND_TYPE } from "../../components/model";
import { resourceArgs } from "../../policy/evaluate";
import {
  CA_CHECKSUM,
  changed,
  INSECURE_COMMAND,
  labProgramResources,
  registration,
  registrationCommand,
  UAT1_NODES,
} from "./rancher-fixture";
import { assertNoViolations, assertViolation, HOST_KEY, resource } from "./util";

/** The SDK's marker for a string a preview does not know yet. */
const UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

describe("policy rancher-registration-verifies-ca", function () {
  this.timeout(60000);
  const compliant = [registration(UAT1_NODES[0])];
  const name = compliant[0].name;
  const withInputs = (inputs: Record<string, unknown>) => changed(compliant, name, { inputs });
  const remoteRegistration = (create: string) =>
    resource(
      REMOTE_COMMAND_TYPE,
      { connection: { host: "192.168.122.31", user: "root", hostKey: HOST_KEY }, create },
      "register-31",
    );

  it("accepts Rancher's node command with the stack's CA checksum", async () => {
    await assertNoViolations(policy, compliant);
  });

  it("accepts a preview that does not know the command yet", async () => {
    await assertNoViolations(policy, withInputs({ registrationCommand: undefined }));
  });

  it("checks what is known when the engine hands it an unknown command", async () => {
    const args = resourceArgs(withInputs({ insecure: true })[0]);
    const reported: string[] = [];
    const validate = policy.validateResource as ResourceValidation;
    await validate(
      {
        ...args,
        props: unknownCheckingProxy({ ...args.props, registrationCommand: UNKNOWN_STRING }),
      },
      (message: string) => reported.push(message),
    );
    assert.equal(reported.length, 1);
    assert.match(reported[0], /sza122031\.local into uat1 is set to insecure\./);
  });

  it("flags a registration set to insecure, naming node and cluster", async () => {
    await assertViolation(
      policy,
      withInputs({ insecure: true }),
      /registration of sza122031\.local into uat1 is set to insecure\. Registration must verify Rancher's CA with --ca-checksum/,
    );
  });

  it("flags Rancher's insecure command: no certificate check and no checksum", async () => {
    await assertViolation(
      policy,
      withInputs({ registrationCommand: INSECURE_COMMAND }),
      /curl --insecure\); passes no --ca-checksum.*anyone in the path can capture the cluster's registration token/,
    );
  });

  it("flags curl's -k among short flags even when a checksum is passed", async () => {
    const command = registrationCommand().replace("curl -fL", "curl -kfL");
    await assertViolation(
      policy,
      withInputs({ registrationCommand: command }),
      /certificate checks off/,
    );
  });

  it("flags a command without --ca-checksum", async () => {
    const command = registrationCommand().replace(/ --ca-checksum \S+/, "");
    await assertViolation(
      policy,
      withInputs({ registrationCommand: command }),
      /passes no --ca-checksum/,
    );
  });

  it("flags a checksum that is not the stack's Rancher CA", async () => {
    const other = "0".repeat(64);
    await assertViolation(
      policy,
      withInputs({ registrationCommand: registrationCommand(other) }),
      new RegExp(`passes --ca-checksum ${other}, not the stack's Rancher CA \\(${CA_CHECKSUM}\\)`),
    );
  });

  it("says how a stack that needs the insecure command makes the policy advisory", async () => {
    await assertViolation(policy, withInputs({ insecure: true }), /--policy-pack-config/);
  });

  it("flags a remote command that registers with Rancher insecurely", async () => {
    await assertViolation(
      policy,
      [remoteRegistration(`${INSECURE_COMMAND} --etcd --controlplane`)],
      /register-31 \(Rancher registration on 192\.168\.122\.31\) fetches the agent installer/,
    );
  });

  it("accepts a remote command running Rancher's node command, and unrelated commands", async () => {
    await assertNoViolations(policy, [
      remoteRegistration(`${registrationCommand()} --etcd --controlplane`),
      { ...remoteRegistration("curl -k https://example.test/x | sh"), name: "other" },
    ]);
  });

  it("accepts the lab stack's own registrations", async function () {
    await assertNoViolations(policy, await labProgramResources(RANCHER_NODE_REGISTRATION.token));
  });
});
