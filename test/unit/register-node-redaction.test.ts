/**
 * register-node.sh's failure path as a registration that Rancher refuses takes it: the
 * installer's output carries the token, and the step's error must name the failure without the
 * token reaching the message or any process's command line (readable by every local user in
 * /proc/<pid>/cmdline). Runs the script with bash, the installer and the tools it pipes through
 * replaced by recorders of their arguments.
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { componentFile } from "../../components/assets";
import { scriptWithParams } from "../../components/ssh/run-script";

const SCRIPT = componentFile(
  path.join(__dirname, "../../components/rancher-cluster"),
  "register-node.sh",
);
const TOKEN = "q9w8e7r6t5y4u3i2o1p0lkjhgfdsazxcvbnmqwertyuiop1234567";

describe("register-node.sh when the agent installer fails", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-register-"));
  const argvLog = path.join(dir, "argv.log");
  const bin = path.join(dir, "bin");
  before(() => {
    fs.mkdirSync(bin);
    // Every external tool the script may pipe the output through records its arguments.
    for (const tool of ["grep", "sed", "tail", "head", "cut", "tr", "awk", "cat"]) {
      const real = spawnSync("bash", ["-c", `command -v ${tool}`], {
        encoding: "utf8",
      }).stdout.trim();
      if (!real) continue;
      fs.writeFileSync(
        path.join(bin, tool),
        `#!/bin/bash\nprintf '%s\\n' "${tool} $*" >>${argvLog}\nexec ${real} "$@"\n`,
        { mode: 0o755 },
      );
    }
    // The installer prints the token back, as install.sh's curl lines do, and fails.
    fs.writeFileSync(
      path.join(bin, "curl"),
      `#!/bin/bash\nprintf '%s\\n' "curl $*" >>${argvLog}\nprintf '%s\\n' 'echo "[ERROR] 401 from /v3/connect/agent with token $CATTLE_TOKEN"' 'echo' 'exit 1'\n`,
      { mode: 0o755 },
    );
    fs.writeFileSync(path.join(bin, "systemctl"), "#!/bin/bash\nexit 1\n", { mode: 0o755 });
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("names the installer's last line with the token replaced, and no tool ever gets the token", () => {
    const text = scriptWithParams(SCRIPT, {
      MODE: "apply",
      INSTALLER_URL: "https://ai-ear.cn/system-agent-install.sh",
      CATTLE_SERVER: "https://ai-ear.cn",
      CATTLE_TOKEN: TOKEN,
      CATTLE_CA_CHECKSUM: "",
      INSECURE: "false",
      ROLE_FLAGS: "--worker",
      RANCHER_CA: "",
      RANCHER_HOST: "ai-ear.cn",
      TIMEOUT_SECONDS: "5",
      POLL_SECONDS: "1",
    });
    const r = spawnSync("bash", ["-s"], {
      input: text,
      encoding: "utf8",
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /error: the agent installer failed: \[ERROR\] 401 from \/v3\/connect\/agent with token <registration token>/,
    );
    assert.ok(!r.stderr.includes(TOKEN), "the token is in the step's error");
    const argv = fs.existsSync(argvLog) ? fs.readFileSync(argvLog, "utf8") : "";
    assert.match(argv, /^curl /m, "the installer never ran");
    assert.ok(!argv.includes(TOKEN), `a command line carried the token:\n${argv}`);
  });
});
