/**
 * `npm run verify -- --stack <name> [--file <yaml>] [--management-outputs <json>]
 * [--policy-pack-config <json>] [--json]`:
 * validates the stack config, runs the program under Pulumi's mock runtime, and evaluates every
 * policy of the pack on every resource it registers, at the enforcement levels the policy pack
 * config gives (as `pulumi preview --policy-pack policy --policy-pack-config` would). Exits 1 on
 * a config problem or a mandatory violation. No Pulumi CLI, no network.
 */
import * as fs from "fs";
import * as pulumi from "@pulumi/pulumi";
import { allPolicies } from "../../policy/policies";
import { evaluatePolicies, parsePolicyPackConfig, Violation } from "../../policy/evaluate";
import { rawConfigFromStackFile, stackFilePath } from "../config/stack-file";
import { SECRET_KEYS } from "../../components/model";
import { configWarnings, CONFIG_NAMESPACE, validateEnvironment } from "../config/validate";
import { recordProgram } from "../mock-runtime";
import { deployEnvironment } from "../program";
import { CommandSpec, MANAGEMENT_OUTPUTS_FLAG, parseCommandLine, usageOf } from "./args";
import { managementOutputsFromFile } from "../config/management-stack";

const VERIFY: CommandSpec = {
  usage:
    "npm run verify -- --stack <name> [--file <stack yaml>] [--management-outputs <json>] " +
    "[--policy-pack-config <json>] [--json]",
  flags: {
    stack: { value: true, help: "the stack to check (stacks/Pulumi.<name>.yaml)" },
    file: { value: true, help: "read the stack config from this file instead" },
    "management-outputs": MANAGEMENT_OUTPUTS_FLAG,
    "policy-pack-config": {
      value: true,
      help: "enforcement levels, as pulumi preview --policy-pack-config takes them",
    },
    json: { value: false, help: "print the report as JSON" },
  },
};

interface Report {
  stack: string;
  configProblems: { key: string; message: string }[];
  /**
   * Keys the deploy selection leaves unused, what `up` checks on the live estate, and fixes
   * that would be lost: they fail nothing.
   */
  configWarnings: { key: string; message: string }[];
  violations: Violation[];
  resources: number;
}

async function main(argv: readonly string[]): Promise<number> {
  const line = parseCommandLine(argv, VERIFY);
  if (line.help) {
    console.log(line.text);
    return 0;
  }
  const { flags } = line;
  const stack = flags.get("stack");
  if (!stack) {
    console.error(`--stack is required\n${usageOf(VERIFY)}`);
    return 2;
  }
  const configFile = flags.get("policy-pack-config");
  const overrides = configFile
    ? parsePolicyPackConfig(fs.readFileSync(configFile, "utf8"), configFile, allPolicies)
    : {};
  const json = flags.has("json");
  const raw = rawConfigFromStackFile(flags.get("file") ?? stackFilePath(stack));
  const outputsFile = flags.get("management-outputs");
  const { model, problems } = validateEnvironment(stack, raw, {
    requireSecrets: false,
    managementOutputs: outputsFile ? managementOutputsFromFile(outputsFile) : undefined,
  });
  const report: Report = {
    stack,
    configProblems: problems,
    configWarnings: model ? configWarnings(model, raw) : [],
    violations: [],
    resources: 0,
  };
  if (model) {
    const resources = await recordProgram(CONFIG_NAMESPACE, stack, () => {
      // Secrets are never read offline; placeholders keep their secret wrapping (registryAuth's
      // is JSON, as its value is: a map with no credentials).
      const placeholder = (k: string) => (k === "registryAuth" ? "{}" : `<${k}>`);
      const secrets = Object.fromEntries(
        SECRET_KEYS.map((k) => [k, pulumi.secret(placeholder(k))]),
      );
      deployEnvironment(model, secrets);
    });
    report.resources = resources.length;
    report.violations = await evaluatePolicies(allPolicies, resources, overrides);
  }
  const failed =
    report.configProblems.length > 0 || report.violations.some((v) => v.level === "mandatory");
  if (json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    for (const p of report.configProblems) console.log(`config error  ${p.key}: ${p.message}`);
    for (const w of report.configWarnings) console.log(`warning  ${w.key}: ${w.message}`);
    for (const v of report.violations) {
      console.log(
        `${v.level.padEnd(9)} ${v.policy}  ${v.resource ?? "(stack)"}\n          ${v.message}`,
      );
    }
    console.log(
      `stack "${stack}": ${report.configProblems.length} config problem(s), ` +
        `${report.configWarnings.length} warning(s), ${report.violations.length} violation(s) ` +
        `on ${report.resources} resource(s): ${failed ? "FAIL" : "ok"}`,
    );
  }
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
