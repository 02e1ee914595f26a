/**
 * `npm run doctor -- --stack <name> [--file <yaml>] [--ssh-key <file>] [--management-outputs
 * <json>] [--json]`: names each incident's cause on the live estate a stack describes, host by
 * host, with its evidence and remedy (infra/doctor). Reads only: no Pulumi state, no change on a
 * host. The SSH key is the stack's `sshPrivateKey` secret, read from the stack file with the
 * passphrase Pulumi would use, or the file --ssh-key names. Exits 0 when no cause is found, 1
 * when one is, 2 on bad input.
 */
import * as fs from "fs";
import { validateEnvironment } from "../config/validate";
import { rawConfigFromStackFile, stackFilePath } from "../config/stack-file";
import { managementOutputsFromFile } from "../config/management-stack";
import { diagnoseModel, type DoctorProgress } from "../doctor/diagnose";
import { reportText } from "../doctor/report";
import { passphraseFromEnvironment, stackSecret } from "../doctor/stack-secrets";
import { CommandSpec, MANAGEMENT_OUTPUTS_FLAG, parseCommandLine, usageOf } from "./args";

const DOCTOR: CommandSpec = {
  usage:
    "npm run doctor -- --stack <name> [--file <stack yaml>] [--ssh-key <file>] " +
    "[--management-outputs <json>] [--json]",
  flags: {
    stack: { value: true, help: "the stack whose estate to read (stacks/Pulumi.<name>.yaml)" },
    file: { value: true, help: "read the stack config from this file instead" },
    "ssh-key": {
      value: true,
      help: "the SSH private key file, where the stack's secret cannot be read here",
    },
    "management-outputs": MANAGEMENT_OUTPUTS_FLAG,
    json: { value: false, help: "print the report as JSON" },
  },
};

function progressLine(p: DoctorProgress): string {
  const slow = p.slowest
    ? `; slowest: ${p.slowest.check} on ${p.slowest.host}, ${Math.round(p.slowest.ms / 1000)} s`
    : "";
  return `doctor: ${p.hostsDone}/${p.hosts} hosts read${slow}`;
}

async function main(argv: readonly string[]): Promise<number> {
  const line = parseCommandLine(argv, DOCTOR);
  if (line.help) {
    console.log(line.text);
    return 0;
  }
  const { flags } = line;
  const stack = flags.get("stack");
  if (!stack) {
    console.error(`--stack is required\n${usageOf(DOCTOR)}`);
    return 2;
  }
  const file = flags.get("file") ?? stackFilePath(stack);
  const outputsFile = flags.get("management-outputs");
  const { model, problems } = validateEnvironment(stack, rawConfigFromStackFile(file), {
    requireSecrets: false,
    managementOutputs: outputsFile ? managementOutputsFromFile(outputsFile) : undefined,
  });
  if (!model) {
    console.error(`${file} has ${problems.length} problem(s):`);
    for (const p of problems) console.error(`  - ${p.key}: ${p.message}`);
    return 2;
  }
  const keyFile = flags.get("ssh-key");
  const sshPrivateKey = keyFile
    ? fs.readFileSync(keyFile, "utf8")
    : stackSecret(file, "sshPrivateKey", passphraseFromEnvironment());
  if (!sshPrivateKey) {
    console.error(
      `${file} sets no sshPrivateKey; set it (pulumi config set --secret sshPrivateKey) or pass --ssh-key <file>.`,
    );
    return 2;
  }
  let last = "";
  const report = await diagnoseModel(model, {
    sshPrivateKey,
    onProgress: (p) => {
      const text = progressLine(p);
      if (text !== last) console.error(text);
      last = text;
    },
  });
  console.log(flags.has("json") ? JSON.stringify(report, null, 2) : reportText(report));
  return report.findings.length > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`doctor: ${err.message}`);
    process.exit(2);
  },
);
