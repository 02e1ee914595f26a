/**
 * `npm run render -- --stack <name> [--management-outputs <json>] --out <dir>`: writes every artifact the stack would put on
 * hosts and clusters, of the parts its `deploy` selection turns on, plus <dir>/index.json listing
 * them. No Pulumi CLI, no network.
 */
import * as fs from "fs";
import * as path from "path";
import { ConfigValidationError } from "../config/problems";
import { rawConfigFromStackFile, stackFilePath } from "../config/stack-file";
import { loadEnvironmentModel } from "../config/validate";
import { renderArtifacts, RESTART_PLAN_PATH } from "../render";
import { RestartPlan } from "../../components/rke2-cluster/restart-plan";
import { CommandSpec, MANAGEMENT_OUTPUTS_FLAG, parseCommandLine, usageOf } from "./args";
import { managementOutputsFromFile } from "../config/management-stack";

const RENDER: CommandSpec = {
  usage:
    "npm run render -- --stack <name> [--file <stack yaml>] [--management-outputs <json>] --out <dir>",
  flags: {
    stack: { value: true, help: "the stack whose config is rendered (stacks/Pulumi.<name>.yaml)" },
    file: { value: true, help: "read the stack config from this file instead" },
    "management-outputs": MANAGEMENT_OUTPUTS_FLAG,
    out: { value: true, help: "directory the artifacts and index.json are written to" },
  },
};

function main(argv: readonly string[]): number {
  const line = parseCommandLine(argv, RENDER);
  if (line.help) {
    console.log(line.text);
    return 0;
  }
  const { flags } = line;
  const stack = flags.get("stack");
  const out = flags.get("out");
  if (!stack || !out) {
    console.error(`--stack and --out are required\n${usageOf(RENDER)}`);
    return 2;
  }
  const outputsFile = flags.get("management-outputs");
  const model = loadEnvironmentModel(
    stack,
    rawConfigFromStackFile(flags.get("file") ?? stackFilePath(stack)),
    {
      requireSecrets: false,
      managementOutputs: outputsFile ? managementOutputsFromFile(outputsFile) : undefined,
    },
  );
  // The restart plan compares with the plan an earlier render left in the same directory.
  const planFile = path.join(out, RESTART_PLAN_PATH);
  const previous = fs.existsSync(planFile)
    ? (JSON.parse(fs.readFileSync(planFile, "utf8")) as RestartPlan)
    : undefined;
  const artifacts = renderArtifacts(model, previous);
  for (const artifact of artifacts) {
    const file = path.join(out, artifact.path);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, artifact.content, { mode: artifact.mode ?? 0o644 });
  }
  const index = artifacts.map(({ kind, target, path: p, cluster }) => ({
    kind,
    target,
    path: p,
    cluster,
  }));
  fs.writeFileSync(path.join(out, "index.json"), JSON.stringify(index, null, 2) + "\n");
  console.log(`wrote ${artifacts.length} artifacts for stack "${stack}" to ${out}`);
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  console.error(
    err instanceof ConfigValidationError || err instanceof Error ? err.message : String(err),
  );
  process.exitCode = 1;
}
