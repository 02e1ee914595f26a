/**
 * A pull-request preview of the `uat1` stack (stacks/Pulumi.uat1.yaml) with the real Pulumi CLI
 * and the policy pack. The `rancher2` provider plugin is the lab's Node stand-in on PATH; the
 * preview reaches no host (SSH from the operator namespace is blocked while it runs). Secrets
 * live in a copy of the stack file and in a throw-away backend, never in the repository.
 *
 * uat1 reads Rancher's URL, CA and addresses from the `lab` stack (`managementStack`) through a
 * real StackReference. The backend's `lab` stack is the shipped lab stack with every part
 * turned off, brought up by the same program: it declares nothing and reaches no host, and its
 * outputs are the ones a full `up` of it exports.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { stackFilePath } from "../../infra/config/stack-file";
import { REPO, run } from "../real/lab";
import { checkoutOf, runWorkflow, WorkflowRun } from "../support/workflow";

const STACK = "uat1";
const MANAGEMENT = "lab";
const NS = "rke2-remediation";
const PARTS = [
  "libvirtDnsRecords",
  "nodePreparation",
  "rke2Servers",
  "clusterDns",
  "rancherClusters",
];

describe("the uat1 stack in a pull-request preview", function () {
  this.timeout(300000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-uat1-"));
  const configFile = path.join(dir, "Pulumi.uat1.yaml");
  const labFile = path.join(dir, "Pulumi.lab.yaml");
  /** The shipped lab stack with its secrets, for previews of it as it is (every part on). */
  const labShippedFile = path.join(dir, "Pulumi.lab-shipped.yaml");
  const env = {
    ...process.env,
    PULUMI_BACKEND_URL: `file://${dir}/state`,
    PULUMI_CONFIG_PASSPHRASE: "uat1-preview-test",
    PULUMI_NODEJS_TRANSPILE_ONLY: "true",
  };

  function pulumi(...args: string[]): { status: number; out: string } {
    return pulumiOn(STACK, ...args);
  }

  function pulumiOn(stack: string, ...args: string[]): { status: number; out: string } {
    const r = spawnSync(
      "pulumi",
      [...args, "--stack", stack, "--non-interactive", "--color", "never"],
      { cwd: REPO, encoding: "utf8", timeout: 240000, env },
    );
    return { status: r.status ?? -1, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
  }

  /** `stack init` of a shipped stack into the backend; its config goes to `copy`, salt included. */
  function initFromShipped(stack: string, copy: string): void {
    const repoFile = stackFilePath(stack);
    const original = fs.readFileSync(repoFile, "utf8");
    if (!fs.existsSync(copy)) fs.writeFileSync(copy, original);
    // `stack init` writes the passphrase salt into the stack's file in the repository: put the
    // file back at once; the copy carries the salt and the secrets from here on.
    const init = pulumiOn(stack, "stack", "init", "--secrets-provider", "passphrase");
    const salted = fs.readFileSync(repoFile, "utf8");
    fs.writeFileSync(repoFile, original);
    assert.equal(init.status, 0, init.out);
    const salt = /^encryptionsalt: .*$/m.exec(salted)?.[0];
    if (salt) fs.appendFileSync(copy, `${salt}\n`);
  }

  /** `pulumi up` of the backend's lab stack: the shipped file, every part off, `change` applied. */
  function upManagementStack(change: (config: Record<string, unknown>) => void = () => {}): void {
    const doc = YAML.parse(fs.readFileSync(stackFilePath(MANAGEMENT), "utf8")) as {
      config: Record<string, unknown>;
    };
    doc.config[`${NS}:deploy`] = Object.fromEntries(PARTS.map((p) => [p, false]));
    change(doc.config);
    const salt = /^encryptionsalt: .*$/m.exec(fs.readFileSync(labFile, "utf8"))?.[0];
    fs.writeFileSync(labFile, YAML.stringify(doc) + (salt ? `${salt}\n` : ""));
    const up = pulumiOn(MANAGEMENT, "up", "--yes", "--skip-preview", "--config-file", labFile);
    assert.equal(up.status, 0, up.out);
  }

  function preview(): { status: number; out: string } {
    return previewOf(STACK, configFile);
  }

  /** A preview with the policy pack, SSH blocked while it runs (it must reach no host). */
  function previewOf(
    stack: string,
    file: string,
    ...args: string[]
  ): { status: number; out: string } {
    const block = ["OUTPUT", "-p", "tcp", "--dport", "22", "-j", "REJECT"];
    assert.equal(run("iptables", ["-I", ...block]).status, 0);
    try {
      return pulumiOn(stack, "preview", "--policy-pack", "policy", "--config-file", file, ...args);
    } finally {
      run("iptables", ["-D", ...block]);
    }
  }

  function setSecret(stack: string, file: string, name: string, value: string): void {
    const r = spawnSync(
      "pulumi",
      ["config", "set", "--secret", name, "--stack", stack, "--config-file", file],
      { cwd: REPO, encoding: "utf8", input: value, env },
    );
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  }

  before(() => {
    fs.mkdirSync(path.join(dir, "state"));
    initFromShipped(MANAGEMENT, labFile);
    upManagementStack();
    initFromShipped(STACK, configFile);
    const key = path.join(dir, "id_ed25519");
    assert.equal(run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]).status, 0);
    setSecret(STACK, configFile, "sshPrivateKey", fs.readFileSync(key, "utf8"));
    setSecret(STACK, configFile, "rancherToken", "token-preview:not-a-real-token");
    const salt = /^encryptionsalt: .*$/m.exec(fs.readFileSync(labFile, "utf8"))?.[0];
    fs.writeFileSync(
      labShippedFile,
      fs.readFileSync(stackFilePath(MANAGEMENT), "utf8") + (salt ? `${salt}\n` : ""),
    );
    setSecret(MANAGEMENT, labShippedFile, "sshPrivateKey", fs.readFileSync(key, "utf8"));
    setSecret(MANAGEMENT, labShippedFile, "rke2Token", "K10preview::server:not-a-real-token");
  });

  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("previews the ClusterV2, the ordered registrations and the syncs, and passes every policy", () => {
    const r = preview();
    assert.equal(r.status, 0, r.out);
    for (const expected of [
      /\+ +rancher2:index:ClusterV2 rancher-uat1 create/,
      /\+ +pulumi-nodejs:dynamic\/rancher:NodeRegistration rancher-uat1-register-sza122031\.local create/,
      /\+ +pulumi-nodejs:dynamic\/rancher:NodeRegistration rancher-uat1-register-sza122030\.local create/,
      /\+ +pulumi-nodejs:dynamic\/rancher:ClusterWait rancher-uat1-active-sza122031\.local create/,
      /\+ +rancher2:index:ClusterSync rancher-uat1-sync-sza122031\.local create/,
    ]) {
      assert.match(r.out, expected);
    }
    assert.match(r.out, /Policies:\s+✅ rke2-remediation/);
    assert.doesNotMatch(r.out, /token-preview:not-a-real-token/);
  });

  it("reads Rancher's URL, CA and addresses from the lab stack's outputs", () => {
    const outputs = JSON.parse(pulumiOn(MANAGEMENT, "stack", "output", "--json").out) as {
      rancher: { url: string; caCertificate: string; addresses: string[] };
    };
    const lab = YAML.parse(fs.readFileSync(stackFilePath(MANAGEMENT), "utf8")).config[
      `${NS}:rancher`
    ] as { url: string; caCertificate: string };
    assert.equal(outputs.rancher.url, lab.url);
    assert.equal(outputs.rancher.caCertificate, lab.caCertificate);
    assert.deepEqual(outputs.rancher.addresses, [
      "192.168.122.20",
      "192.168.122.21",
      "192.168.122.22",
    ]);
    // What the preview registers with: Rancher's checksum of that CA (SHA-256 of the PEM with
    // its final newline, rancher/rancher@v2.14.3 pkg/systemtemplate/import.go CAChecksum), and
    // the cluster DNS's answer for Rancher's host, in the ClusterV2's chartValues.
    const r = pulumi("preview", "--json", "--config-file", configFile);
    assert.equal(r.status, 0, r.out);
    const checksum = createHash("sha256").update(lab.caCertificate).digest("hex");
    assert.ok(r.out.includes(checksum), "the preview registers with another CA checksum");
    for (const ip of ["192.168.122.20", "192.168.122.21", "192.168.122.22"])
      assert.ok(r.out.includes(`${ip} ai-ear.cn`), `no answer ${ip} for ai-ear.cn in chartValues`);
  });

  it("fails naming managementStack when the stack it names does not exist", () => {
    const doc = YAML.parse(fs.readFileSync(configFile, "utf8")) as {
      config: Record<string, unknown>;
    };
    doc.config[`${NS}:managementStack`] = "organization/rke2-remediation/nosuch";
    const file = path.join(dir, "Pulumi.uat1-nosuch.yaml");
    fs.writeFileSync(file, YAML.stringify(doc));
    const r = previewOf(STACK, file);
    assert.notEqual(r.status, 0, r.out);
    // The engine fails the StackReference, which is named after the key.
    assert.match(
      r.out,
      /pulumi:pulumi:StackReference \(managementStack\):\s+error: Preview failed: unknown stack "organization\/rke2-remediation\/nosuch"/,
    );
  });

  it("refuses the old order (the etcd + controlplane node, a sync, then the worker), which never starts", () => {
    // A program of its own registering uat1's nodes that way, previewed with the same pack.
    const program = path.join(REPO, "test", "e2e", "programs", "old-registration-order");
    const run = (...args: string[]) => {
      const r = spawnSync(
        "pulumi",
        [...args, "--stack", "old-order", "--non-interactive", "--color", "never"],
        {
          cwd: program,
          encoding: "utf8",
          timeout: 240000,
          env,
        },
      );
      return { status: r.status ?? -1, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
    };
    const init = run("stack", "init", "--secrets-provider", "passphrase");
    try {
      assert.equal(init.status, 0, init.out);
      const r = run("preview", "--policy-pack", path.join(REPO, "policy"));
      assert.notEqual(r.status, 0, r.out);
      assert.match(r.out, /\[mandatory\] +rancher-first-group-registers-without-waiting/);
      assert.match(
        r.out,
        /sza122030\.local \(worker\) registers only after a wait for the cluster/,
      );
      assert.doesNotMatch(r.out, /token-preview:not-a-real-token/);
    } finally {
      fs.rmSync(path.join(program, "Pulumi.old-order.yaml"), { force: true });
    }
  });

  it("fails with the mandatory violation when the stack opts in to insecure registration", () => {
    const compliant = fs.readFileSync(configFile, "utf8");
    const doc = YAML.parse(compliant) as { config: Record<string, unknown> };
    const rancher = doc.config[`${NS}:rancher`] as {
      downstreamClusters: Record<string, unknown>[];
    };
    rancher.downstreamClusters[0].insecureRegistration = true;
    fs.writeFileSync(configFile, YAML.stringify(doc));
    try {
      const r = preview();
      assert.notEqual(r.status, 0, r.out);
      assert.match(r.out, /\[mandatory\] +rancher-registration-verifies-ca/);
      assert.match(r.out, /register-sza122031\.local/);
    } finally {
      fs.writeFileSync(configFile, compliant);
    }
  });

  it("refuses uat1 once the lab stack declares the cluster and its nodes too, naming the keys", () => {
    const uat1 = YAML.parse(fs.readFileSync(stackFilePath(STACK), "utf8")).config;
    upManagementStack((c) => {
      (c[`${NS}:nodes`] as unknown[]).push(...(uat1[`${NS}:nodes`] as unknown[]));
      (c[`${NS}:rancher`] as Record<string, unknown>).downstreamClusters =
        uat1[`${NS}:rancher`].downstreamClusters;
    });
    try {
      const r = preview();
      assert.notEqual(r.status, 0, r.out);
      assert.match(
        r.out,
        /rke2-remediation:rancher\.downstreamClusters\[0\]\.name: cluster "uat1" is declared by the management stack "organization\/rke2-remediation\/lab"/,
      );
      assert.match(
        r.out,
        /rke2-remediation:nodes\[0\]: sza122031\.local \(192\.168\.122\.31\) is the node/,
      );
    } finally {
      upManagementStack();
    }
  });

  describe("verify and pulumi preview --policy-pack agree", () => {
    /** `[level] policy` for each policy a preview reports violated. */
    const previewViolations = (out: string) =>
      [
        ...new Set(
          [...out.matchAll(/\[(mandatory|advisory)\] +([a-z0-9-]+)/g)].map(
            (m) => `${m[1]} ${m[2]}`,
          ),
        ),
      ].sort();

    const insecureUat1 = path.join(dir, "Pulumi.uat1-insecure.yaml");
    const advisory = path.join(dir, "policy-config.json");
    const labOutputs = path.join(dir, "lab-outputs.json");

    before(() => {
      const doc = YAML.parse(fs.readFileSync(configFile, "utf8")) as {
        config: Record<string, unknown>;
      };
      const rancher = doc.config[`${NS}:rancher`] as {
        downstreamClusters: Record<string, unknown>[];
      };
      rancher.downstreamClusters[0].insecureRegistration = true;
      fs.writeFileSync(insecureUat1, YAML.stringify(doc));
      fs.writeFileSync(
        advisory,
        JSON.stringify({ "rancher-registration-verifies-ca": "advisory" }),
      );
      const outputs = pulumiOn(MANAGEMENT, "stack", "output", "--json");
      assert.equal(outputs.status, 0, outputs.out);
      fs.writeFileSync(labOutputs, outputs.out);
    });

    const cases: { name: string; stack: string; file: () => string; violated: boolean }[] = [
      {
        name: "the shipped lab stack",
        stack: MANAGEMENT,
        file: () => labShippedFile,
        violated: false,
      },
      { name: "the shipped uat1 stack", stack: STACK, file: () => configFile, violated: false },
      {
        name: "uat1 opting in to insecure registration",
        stack: STACK,
        file: () => insecureUat1,
        violated: true,
      },
    ];
    for (const c of cases) {
      for (const withConfig of [false, true]) {
        it(`on ${c.name}, ${withConfig ? "with" : "without"} a --policy-pack-config file`, () => {
          const configArgs = withConfig ? ["--policy-pack-config", advisory] : [];
          const p = previewOf(c.stack, c.file(), ...configArgs);
          const verify = spawnSync(
            process.execPath,
            [
              path.join(REPO, "bin", "infra", "cli", "verify.js"),
              "--stack",
              c.stack,
              "--file",
              c.file(),
              ...(c.stack === STACK ? ["--management-outputs", labOutputs] : []),
              ...configArgs,
              "--json",
            ],
            { cwd: REPO, encoding: "utf8", env },
          );
          const report = JSON.parse(verify.stdout) as {
            configProblems: unknown[];
            violations: { policy: string; level: string }[];
          };
          assert.deepEqual(report.configProblems, []);
          const verified = [
            ...new Set(report.violations.map((v) => `${v.level} ${v.policy}`)),
          ].sort();
          assert.deepEqual(previewViolations(p.out), verified, p.out);
          assert.equal(p.status === 0, verify.status === 0, `${p.out}\n${verify.stdout}`);
          // The cases must tell the two apart: the insecure stack is flagged, and its
          // mandatory violation fails both only without the file.
          assert.equal(verified.length > 0, c.violated);
          if (c.violated)
            assert.deepEqual(verified, [
              `${withConfig ? "advisory" : "mandatory"} rancher-registration-verifies-ca`,
            ]);
          else assert.equal(p.status, 0, p.out);
        });
      }
    }
  });

  describe("the pull-request workflow, run step by step on a checkout", function () {
    // A whole workflow run: npm ci, then each stack's offline check and preview with the policy
    // pack. This file runs at niceness 10 beside two labs; on a slow day one run took 277 s.
    this.timeout(600000);
    let checkout: string;
    const workflow = path.join(REPO, ".github", "workflows", "policy-preview.yml");
    /** The machine the runner starts from: the lab's CLI on PATH, no Pulumi settings. */
    const machine = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("PULUMI_")),
    );
    const secrets = {
      PULUMI_BACKEND_URL: env.PULUMI_BACKEND_URL,
      PULUMI_CONFIG_PASSPHRASE: env.PULUMI_CONFIG_PASSPHRASE,
    };
    const stepOf = (run: WorkflowRun, stack: string, name: string) => {
      const step = run.steps.find((s) => s.matrix.stack === stack && s.step === name);
      assert.ok(step, `no step "${name}" ran for ${stack}`);
      return step;
    };
    const describeRun = (run: WorkflowRun) =>
      run.steps
        .map(
          (s) =>
            `[${s.job} ${JSON.stringify(s.matrix)}] ${s.step}: ${s.status}\n${s.out.slice(-2000)}`,
        )
        .join("\n");

    before(() => {
      checkout = checkoutOf(REPO);
      // The stack files as a repository holds them: salt and secrets included.
      fs.copyFileSync(labShippedFile, path.join(checkout, "stacks", `Pulumi.${MANAGEMENT}.yaml`));
      fs.copyFileSync(configFile, path.join(checkout, "stacks", `Pulumi.${STACK}.yaml`));
    });
    after(() => fs.rmSync(checkout, { recursive: true, force: true }));

    it("passes the shipped lab and uat1 stacks; uat1's offline check reads lab's outputs from the backend", () => {
      const run = runWorkflow(
        workflow,
        checkout,
        { secrets, vars: { POLICY_STACKS: '["lab", "uat1"]' } },
        machine,
      );
      assert.equal(run.ok, true, describeRun(run));
      for (const stack of [MANAGEMENT, STACK]) {
        assert.match(
          stepOf(run, stack, "verify (offline)").out,
          new RegExp(`stack "${stack}": 0 config problem\\(s\\)`),
        );
        assert.match(
          stepOf(run, stack, "preview with the policy pack").out,
          /Policies:\s+✅ rke2-remediation/,
        );
      }
      // The second stack's job restores what the first one's installed, and skips npm ci.
      assert.match(stepOf(run, STACK, "policy-modules").out, /cache restored/);
      assert.ok(!run.steps.some((s) => s.matrix.stack === STACK && /npm ci/.test(s.step)));
      assert.match(stepOf(run, STACK, "verify (offline)").out, /--management-outputs/);
      assert.doesNotMatch(stepOf(run, MANAGEMENT, "verify (offline)").out, /--management-outputs/);
    });

    it("fails uat1 opting in to insecure registration at its offline check, and passes it with POLICY_PACK_CONFIG making that policy advisory", () => {
      const target = path.join(checkout, "stacks", `Pulumi.${STACK}.yaml`);
      const doc = YAML.parse(fs.readFileSync(target, "utf8")) as {
        config: Record<string, unknown>;
      };
      const rancher = doc.config[`${NS}:rancher`] as {
        downstreamClusters: Record<string, unknown>[];
      };
      rancher.downstreamClusters[0].insecureRegistration = true;
      fs.writeFileSync(target, YAML.stringify(doc));
      const vars = { POLICY_STACKS: '["uat1"]' };
      const strict = runWorkflow(workflow, checkout, { secrets, vars }, machine);
      assert.equal(strict.ok, false, describeRun(strict));
      const failed = strict.steps[strict.steps.length - 1];
      assert.equal(failed.step, "verify (offline)");
      assert.match(failed.out, /mandatory\s+rancher-registration-verifies-ca/);
      fs.writeFileSync(
        path.join(checkout, "policy-config.json"),
        JSON.stringify({ "rancher-registration-verifies-ca": "advisory" }),
      );
      const advisory = runWorkflow(
        workflow,
        checkout,
        { secrets, vars: { ...vars, POLICY_PACK_CONFIG: "policy-config.json" } },
        machine,
      );
      assert.equal(advisory.ok, true, describeRun(advisory));
      assert.match(
        stepOf(advisory, STACK, "preview with the policy pack").out,
        /\[advisory\] +rancher-registration-verifies-ca/,
      );
    });
  });
});
