/**
 * The stack files' JSON Schema (stacks/stack-config.schema.json): derived from the declaration,
 * named by every shipped stack file, passed by each of them, and in agreement with `verify` on
 * what it can see: an unknown key at any depth, a value of the wrong type, a number out of bounds,
 * a word not among the choices. Checked with Ajv, a validator of the JSON Schema standard the YAML
 * language server implements too.
 */
import * as assert from "assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import Ajv from "ajv";
import * as YAML from "yaml";
import { STACK_SCHEMA_FILE, stackFileSchema } from "../../infra/config/json-schema";
import { rawConfigFromStackFile, STACKS_DIR } from "../../infra/config/stack-file";
import { CONFIG_NAMESPACE, validateEnvironment } from "../../infra/config/validate";
import { labManagementOutputs } from "../support/lab-stack";

const REPO = path.resolve(__dirname, "..", "..", "..");
const SCHEMA_LINE = "# yaml-language-server: $schema=stack-config.schema.json";

/** The stack files the repository ships (the lab writes others beside them). */
const shipped = execFileSync("git", ["-C", REPO, "ls-files", "stacks/Pulumi.*.yaml"], {
  encoding: "utf8",
})
  .split("\n")
  .filter((f) => f !== "")
  .map((f) => path.join(REPO, f));

function schemaCheck(): (doc: unknown) => string[] {
  const schema = JSON.parse(fs.readFileSync(path.join(REPO, STACK_SCHEMA_FILE), "utf8"));
  const check = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);
  return (doc) =>
    check(doc) ? [] : (check.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

type StackDoc = { config: Record<string, unknown> };

/** What verify says of a stack document, offline (secrets not required). */
function verifyProblems(doc: StackDoc): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-schema-"));
  try {
    const file = path.join(dir, "Pulumi.case.yaml");
    fs.writeFileSync(file, YAML.stringify(doc));
    const raw = rawConfigFromStackFile(file);
    const managed = raw.values.managementStack !== undefined;
    const { problems } = validateEnvironment("case", raw, {
      requireSecrets: false,
      ...(managed ? { managementOutputs: labManagementOutputs() } : {}),
    });
    return problems.map((p) => `${p.key}: ${p.message}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function stackDoc(file: string): StackDoc {
  return YAML.parse(fs.readFileSync(file, "utf8")) as StackDoc;
}

const key = (k: string) => `${CONFIG_NAMESPACE}:${k}`;

/** Sets `value` at `segments` under `root`, each step a map key or a list index that exists. */
function setAt(root: Record<string, unknown>, segments: (string | number)[], value: unknown): void {
  let node: unknown = root;
  for (const segment of segments.slice(0, -1)) {
    node = (node as Record<string | number, unknown>)[segment];
    assert.ok(typeof node === "object" && node !== null, `no ${segments.join(".")} in the stack`);
  }
  (node as Record<string | number, unknown>)[segments[segments.length - 1]] = value;
}

describe("the stack files' JSON Schema", () => {
  const check = schemaCheck();

  it("is the one the declaration gives (npm run schema writes it)", () => {
    const onDisk = JSON.parse(fs.readFileSync(path.join(REPO, STACK_SCHEMA_FILE), "utf8"));
    assert.deepEqual(
      onDisk,
      stackFileSchema(),
      `${STACK_SCHEMA_FILE} is stale: run npm run schema`,
    );
  });

  it("is named by the first line of every shipped stack file, and each passes it", () => {
    assert.ok(shipped.length >= 2);
    for (const file of shipped) {
      const first = fs.readFileSync(file, "utf8").split("\n")[0];
      assert.equal(first, SCHEMA_LINE, path.basename(file));
      assert.deepEqual(check(stackDoc(file)), [], path.basename(file));
      assert.deepEqual(verifyProblems(stackDoc(file)), [], path.basename(file));
    }
  });

  it("takes a secret in place of any value, as Pulumi writes it", () => {
    const doc = stackDoc(path.join(STACKS_DIR, "Pulumi.lab.yaml"));
    doc.config[key("rke2Token")] = { secure: "v1:AAAA" };
    (doc.config[key("rke2")] as Record<string, unknown>).registrationAddress = {
      secure: "v1:BBBB",
    };
    assert.deepEqual(check(doc), []);
  });

  describe("and verify both refuse", () => {
    /**
     * A value set in the lab stack's document at `path` (a top-level key, then map keys and list
     * indexes); `at` is the key verify names.
     */
    const cases: { what: string; at: string; path: (string | number)[]; value: unknown }[] = [
      {
        what: "a key of this namespace the program does not read",
        at: "rke2-remediation:dnss",
        path: ["dnss"],
        value: {},
      },
      {
        what: "an unknown key in a map (dns.nodelocal for dns.nodeLocal)",
        at: "rke2-remediation:dns.nodelocal",
        path: ["dns", "nodelocal"],
        value: { enabled: true },
      },
      {
        what: "an unknown key in a list's entry",
        at: "rke2-remediation:nodes[0].rol",
        path: ["nodes", 0, "rol"],
        value: "server",
      },
      {
        what: "a switch written as a word",
        at: "rke2-remediation:deploy.rke2Servers",
        path: ["deploy"],
        value: { rke2Servers: "yes" },
      },
      {
        what: "a port as a string",
        at: "rke2-remediation:libvirt.ssh.port",
        path: ["libvirt", "ssh", "port"],
        value: "22",
      },
      {
        what: "a whole number out of its bounds",
        at: "rke2-remediation:rke2.joinGate.pollSeconds",
        path: ["rke2", "joinGate"],
        value: { pollSeconds: 0 },
      },
      {
        what: "a word outside the choices",
        at: "rke2-remediation:rke2.cni",
        path: ["rke2", "cni"],
        value: "weave",
      },
      {
        what: "a single address where a list goes",
        at: "rke2-remediation:dns.upstreamResolvers",
        path: ["dns", "upstreamResolvers"],
        value: "192.168.122.1",
      },
      {
        what: "a role the program does not know",
        at: "rke2-remediation:nodes[0].roles",
        path: ["nodes", 0, "roles"],
        value: ["master"],
      },
      {
        what: "a policy namespace that is neither a name nor a map",
        at: "rke2-remediation:dns.policyNamespaces[0]",
        path: ["dns", "policyNamespaces"],
        value: [5],
      },
    ];
    for (const c of cases) {
      it(c.what, () => {
        const doc = stackDoc(path.join(STACKS_DIR, "Pulumi.lab.yaml"));
        setAt(doc.config, [key(String(c.path[0])), ...c.path.slice(1)], c.value);
        assert.notDeepEqual(check(doc), [], "the schema passes it");
        const problems = verifyProblems(doc);
        assert.ok(
          problems.some((p) => p.startsWith(`${c.at}:`)),
          `verify does not name ${c.at}: ${problems.join("\n")}`,
        );
      });
    }
  });
});
