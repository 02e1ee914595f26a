/**
 * Rke2Estate, the package's component for programs of their own: the same validation and the
 * same resources as the stack-config program, declared as its children.
 */
import * as assert from "assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { EstateSettings, Rke2Estate } from "../../infra/estate";
import { deployEnvironment } from "../../infra/program";
import { recordProgram } from "../../infra/mock-runtime";
import type { RecordedResource } from "../../components/model";
import { labManagementOutputs, labModel, labRawConfig, uat1RawConfig } from "../support/lab-stack";
import { TEST_SECRETS } from "../support/program";

const ESTATE_TYPE = "rke2remediation:estate:Rke2Estate";

function estate(settings: EstateSettings, name = "lab"): Promise<RecordedResource[]> {
  return recordProgram("one-server", "test", () => {
    new Rke2Estate(name, {
      settings,
      sshPrivateKey: TEST_SECRETS.sshPrivateKey!,
      rke2Token: TEST_SECRETS.rke2Token,
    });
  });
}

/** The error a program's registration ends with, as the engine would report it. */
async function refusal(settings: EstateSettings): Promise<string> {
  try {
    await estate(settings);
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail("the estate was declared");
}

describe("Rke2Estate", () => {
  it("names the config key a program keeps its SSH key under in every host step, and none by default", async () => {
    const withKey = (sshPrivateKeyConfig?: string) =>
      recordProgram("one-server", "test", () => {
        new Rke2Estate("lab", {
          settings: labRawConfig().values,
          sshPrivateKey: TEST_SECRETS.sshPrivateKey!,
          ...(sshPrivateKeyConfig === undefined ? {} : { sshPrivateKeyConfig }),
          rke2Token: TEST_SECRETS.rke2Token,
        });
      });
    const steps = (rs: RecordedResource[]) =>
      rs.filter((r) => typeof r.inputs.sshKeyFingerprint === "string");
    const moved = steps(await withKey("myorg:sshKey"));
    assert.ok(moved.length > 10, `${moved.length} host steps`);
    for (const r of moved) assert.equal(r.inputs.sshKeyConfig, "myorg:sshKey", r.name);
    // A name without a namespace is the program's project's, as the providers' reader takes it.
    for (const r of steps(await withKey("opsKey"))) {
      assert.equal(r.inputs.sshKeyConfig, "one-server:opsKey", r.name);
    }
    for (const name of [undefined, "sshPrivateKey", "one-server:sshPrivateKey"]) {
      for (const r of steps(await withKey(name))) {
        assert.equal("sshKeyConfig" in r.inputs, false, `${String(name)}: ${r.name}`);
      }
    }
  });

  it("declares the stack-config program's resources, each under the estate's name", async () => {
    const program = await recordProgram("rke2-remediation", "lab", () => {
      deployEnvironment(labModel(), TEST_SECRETS);
    });
    const component = await estate(labRawConfig().values, "lab");
    const estateResource = component.find((r) => r.type === ESTATE_TYPE);
    assert.ok(estateResource, "the estate registers itself");
    const declared = component.filter((r) => r !== estateResource);
    assert.deepEqual(
      declared.map((r) => `${r.type} ${r.name}`).sort(),
      program.map((r) => `${r.type} lab-${r.name}`).sort(),
    );
    // What the program declares at the top of the stack is the estate's child.
    const topLevel = new Set(program.filter((r) => r.parent === "").map((r) => `lab-${r.name}`));
    for (const r of declared.filter((d) => topLevel.has(d.name))) {
      assert.equal(r.parent, estateResource.urn, `${r.name}'s parent`);
    }
    // The same inputs (no key, script references, rendered configs) for each resource.
    const inputsOf = (rs: RecordedResource[], prefix: string) =>
      new Map(rs.map((r) => [`${r.type} ${prefix}${r.name}`, r.inputs]));
    const expected = inputsOf(program, "lab-");
    for (const [key, inputs] of inputsOf(declared, "")) {
      assert.deepEqual(
        Object.keys(inputs).sort(),
        Object.keys(expected.get(key) ?? {}).sort(),
        key,
      );
    }
  });

  it("refuses settings that do not validate, naming every key as the stack-config program does", async () => {
    const settings = labRawConfig().values as { nodes: { ip: string }[]; rke2: object };
    settings.nodes[1].ip = "192.168.122.300";
    settings.rke2 = { ...settings.rke2, cni: "weave" };
    const message = await refusal(settings);
    assert.match(message, /Rke2Estate "lab" has 2 problem\(s\) in its arguments/);
    assert.match(message, / {2}- settings\.nodes\[1\]\.ip: "192\.168\.122\.300" /);
    assert.match(message, / {2}- settings\.rke2\.cni: /);
  });

  it("refuses a misspelt key as a stack file's is refused, with the key it meant", async () => {
    const settings = labRawConfig().values as Record<string, Record<string, unknown>>;
    settings.rke2 = { ...settings.rke2, tlsSans: ["rke2.example.com"] };
    const message = await refusal(settings);
    assert.match(message, / {2}- settings\.rke2\.tlsSans: .*tlsSan/);
  });

  it("requires the join token where the settings list a management server", async () => {
    const message = await (async () => {
      try {
        await recordProgram("one-server", "test", () => {
          new Rke2Estate("lab", {
            settings: labRawConfig().values,
            sshPrivateKey: pulumi.secret("key"),
          });
        });
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    })();
    assert.match(
      message,
      / {2}- rke2Token: is needed by these settings; pass it to Rke2Estate, a secret\./,
    );
  });

  it("types its settings from the declaration: a misspelt key or a wrong word does not compile", async () => {
    // The types tier (tsc) fails when either line below compiles; the run checks that
    // validation refuses the same settings for a program that is not type-checked.
    // @ts-expect-error -- rke2 has tlsSan, not tlsSans.
    const misspelt: EstateSettings = { rke2: { tlsSans: ["rke2.example.com"] } };
    // @ts-expect-error -- weave is not one of the CNIs RKE2 ships.
    const unknownCni: EstateSettings = { rke2: { cni: "weave" } };
    const settings = [misspelt, unknownCni].map((s) => ({ ...labRawConfig().values, ...s }));
    assert.match(await refusal(settings[0]), / {2}- settings\.rke2\.tlsSans: .*tlsSan/);
    assert.match(await refusal(settings[1]), / {2}- settings\.rke2\.cni: must be one of /);
  });

  it("refuses a secret written among the settings, where it would sit in plain text", async () => {
    // Only a program that is not type-checked, or casts, can write it there.
    const message = await refusal({
      ...labRawConfig().values,
      rke2Token: "K10-plain",
    } as EstateSettings);
    assert.match(
      message,
      /settings\.rke2Token would be kept in plain text; pass it as the argument of the same name, a secret/,
    );
  });

  it("takes a downstream estate's Rancher values from the management stack's outputs it is given", async () => {
    const declare = (withOutputs: boolean) =>
      recordProgram("one-server", "test", () => {
        new Rke2Estate("uat1", {
          settings: uat1RawConfig().values,
          sshPrivateKey: pulumi.secret("key"),
          rancherToken: pulumi.secret("token-uat1:secret"),
          ...(withOutputs ? { managementOutputs: labManagementOutputs() } : {}),
        });
      });
    await assert.rejects(
      declare(false),
      / {2}- settings\.managementStack: names a management stack; pass its `rancher` output as managementOutputs/,
    );
    const resources = await declare(true);
    const provider = resources.find((r) => r.type === "pulumi:providers:rancher2");
    assert.equal(provider?.name, "uat1-rancher");
    assert.equal(provider?.inputs.apiUrl, "https://ai-ear.cn");
  });
});
