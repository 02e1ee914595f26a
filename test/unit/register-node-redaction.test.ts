/**
 * register-node.sh's failure paths: the installer's output carries the token, and the step's
 * error must name the failure without the token reaching the message or any process's command
 * line (readable by every local user in /proc/<pid>/cmdline); an installer that retries a
 * Rancher that does not answer, or a refused token, is stopped with that reason instead of
 * running into the step's timeout. Runs the script with bash, the installer (served by a fake
 * curl, with the lines rancher/system-agent@v0.14.0 install.sh prints) and the tools it pipes
 * through replaced by recorders of their arguments.
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

describe("register-node.sh when the agent installer fails", function () {
  this.timeout(60000);
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
    // The installer the fake curl serves is the file named by $INSTALLER_BODY.
    fs.writeFileSync(
      path.join(bin, "curl"),
      `#!/bin/bash\nprintf '%s\\n' "curl $*" >>${argvLog}\n` +
        // A failed download: curl's own error line and its exit code.
        `if [ -n "$CURL_FAILS" ]; then echo "$CURL_FAILS" >&2; exit "\${CURL_EXIT:-1}"; fi\n` +
        `cat "$INSTALLER_BODY"\n`,
      { mode: 0o755 },
    );
    fs.writeFileSync(path.join(bin, "systemctl"), "#!/bin/bash\nexit 1\n", { mode: 0o755 });
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Runs register-node.sh with an installer of these lines; returns its result. */
  function register(installer: string, env: Record<string, string> = {}) {
    const body = path.join(dir, "installer.sh");
    fs.writeFileSync(body, installer);
    fs.rmSync(argvLog, { force: true });
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
    const started = Date.now();
    const r = spawnSync("bash", ["-s"], {
      input: text,
      encoding: "utf8",
      timeout: 60000,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, INSTALLER_BODY: body, ...env },
    });
    return { ...r, seconds: (Date.now() - started) / 1000 };
  }

  it("names the installer's last line with the token replaced, and no tool ever gets the token", () => {
    // The installer prints the token back, as install.sh's curl lines can, and fails.
    const r = register(
      'echo "[ERROR] 401 from /v3/connect/agent with token $CATTLE_TOKEN"\necho\nexit 1\n',
    );
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

  for (const [label, curlLine, exit, reason] of [
    [
      "TLS",
      "curl: (60) SSL: no alternative certificate subject name matches target host name '192.168.122.20'",
      "60",
      /TLS with Rancher at https:\/\/ai-ear\.cn fails \(curl: \(60\) SSL: no alternative [^)]*\), at its download: its certificate is not signed by the CA the node trusts/,
    ],
    [
      "a refused connection",
      "curl: (7) Failed to connect to ai-ear.cn port 443 after 1 ms: Couldn't connect to server",
      "7",
      /Rancher at https:\/\/ai-ear\.cn refuses connections from this node \(curl: \(7\) [^)]*\), at its download: nothing listens there/,
    ],
    [
      "404",
      "curl: (22) The requested URL returned error: 404",
      "22",
      /Rancher at https:\/\/ai-ear\.cn answered 404 while downloading the agent installer, at its download: the URL does not lead to Rancher/,
    ],
  ] as const) {
    it(`names the cause when the installer's own download fails: ${label}`, () => {
      const r = register("exit 0\n", { CURL_FAILS: curlLine, CURL_EXIT: exit });
      assert.equal(r.status, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `error: the agent installer could not be downloaded from https://ai-ear\\.cn/system-agent-install\\.sh: ${reason.source}`,
        ),
      );
    });
  }

  it("names a CA checksum mismatch, which ends install.sh at once", () => {
    const r = register(
      'echo "[ERROR]  Configured cacerts checksum (aaaa) does not match given --ca-checksum (bbbb)" >&2\nexit 1\n',
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /error: the agent installer stopped: the CA Rancher serves at https:\/\/ai-ear\.cn\/cacerts is not the one rancher\.caCertificate pins \(Configured cacerts checksum \(aaaa\) does not match/,
    );
  });

  it("gives install.sh the pinned server and checksum as arguments, which beat the installer's own assignments, and Rancher's label", () => {
    const r = register('echo "args: $*"\nexit 1\n');
    assert.match(
      r.stderr,
      /installer: args: --worker --server https:\/\/ai-ear\.cn --label cattle\.io\/os=linux$/m,
    );
  });

  const retrying = (line: string) =>
    `echo $$ >${dir}/installer.pid\nwhile :; do echo "[ERROR]  ${line}. Sleeping for 5 seconds and trying again" >&2; sleep 0.2; done\n`;

  it("stops an installer that cannot reach Rancher within seconds, naming the reason", () => {
    const r = register(retrying("000 received while downloading the CA certificate"));
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /error: the agent installer was stopped: Rancher at https:\/\/ai-ear\.cn does not answer from this node/,
    );
    assert.ok(r.seconds < 30, `took ${r.seconds} s`);
    // Its lines reached the log as they came.
    assert.match(
      r.stderr,
      /installer: \[ERROR\] {2}000 received while downloading the CA certificate/,
    );
  });

  it("stops an installer whose token Rancher refuses, and leaves no installer running", () => {
    // Rancher answers 500 to a token it does not know (configserver/server.go).
    const r = register(retrying("500 received while downloading Rancher connection information"));
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /error: the agent installer was stopped: Rancher at https:\/\/ai-ear\.cn refuses the registration token/,
    );
    const pid = Number(fs.readFileSync(path.join(dir, "installer.pid"), "utf8"));
    assert.ok(pid > 0, "the installer never ran");
    assert.throws(() => process.kill(pid, 0), /ESRCH/, `the installer (pid ${pid}) still runs`);
  });

  /** install.sh's retry loop as it prints with `-sS`: curl's own error line, then its own. */
  const retryingAfter = (curlLine: string, line: string) =>
    `while :; do ${curlLine ? `echo "${curlLine}" >&2; ` : ""}echo "[ERROR]  ${line}. Sleeping for 5 seconds and trying again" >&2; sleep 0.02; done\n`;

  /** The failed tries a run saw before it was stopped. */
  const tries = (stderr: string) => (stderr.match(/installer: \[ERROR\]/g) ?? []).length;

  for (const [label, curlLine, line, reason, expectedTries] of [
    [
      "a name the node cannot resolve",
      "curl: (6) Could not resolve host: ai-ear.cn",
      "000 received while downloading the CA certificate",
      /this node cannot resolve the name in https:\/\/ai-ear\.cn \(curl: \(6\) Could not resolve host: ai-ear\.cn\), 3 tries in a row; check the node's resolver and the libvirt DNS records/,
      3,
    ],
    [
      "a refused connection",
      "curl: (7) Failed to connect to ai-ear.cn port 443 after 0 ms: Couldn't connect to server",
      "000 received while downloading the CA certificate",
      /Rancher at https:\/\/ai-ear\.cn refuses connections from this node \(curl: \(7\) Failed to connect/,
      3,
    ],
    [
      "dropped packets",
      "curl: (28) Connection timed out after 60001 milliseconds",
      "000 received while testing Rancher connection",
      /connections from this node to Rancher at https:\/\/ai-ear\.cn time out \(curl: \(28\) Connection timed out after 60001 milliseconds\), 3 tries in a row \(60 s each\)/,
      3,
    ],
    [
      "a Rancher that accepts but does not answer in time",
      "curl: (28) Operation timed out after 60000 milliseconds with 0 bytes received",
      "000 received while testing Rancher connection",
      /Rancher at https:\/\/ai-ear\.cn accepts connections but sent no answer within 60 s .*5 tries in a row/,
      5,
    ],
    [
      "a certificate the pinned CA did not sign, curl's advice between the tries",
      [
        "curl: (60) SSL certificate problem: unable to get local issuer certificate",
        "More details here: https://curl.se/docs/sslcerts.html",
        "",
        "curl failed to verify the legitimacy of the server and therefore could not",
        "establish a secure connection to it. To learn more about this situation and",
        "how to fix it, please visit the web page mentioned above.",
      ].join("\n"),
      "000 received while testing Rancher connection",
      /TLS with Rancher at https:\/\/ai-ear\.cn fails \(curl: \(60\) SSL certificate problem: unable to get local issuer certificate\), 3 tries in a row: its certificate is not signed by the CA the node trusts \(rancher\.caCertificate/,
      3,
    ],
    [
      "404 on /cacerts",
      "curl: (22) The requested URL returned error: 404",
      "404 received while downloading the CA certificate",
      /Rancher at https:\/\/ai-ear\.cn answered 404 while downloading the CA certificate, 3 tries in a row: the URL does not lead to Rancher/,
      3,
    ],
    [
      "503 on /healthz, which may pass",
      "curl: (22) The requested URL returned error: 503",
      "503 received while testing Rancher connection",
      /Rancher at https:\/\/ai-ear\.cn answered 503 while testing Rancher connection, 24 tries in a row over \d+ s: Rancher, or the proxy in front of it, is up but not ready/,
      24,
    ],
    [
      "502 from the proxy",
      "curl: (22) The requested URL returned error: 502",
      "502 received while downloading the CA certificate",
      /Rancher at https:\/\/ai-ear\.cn answered 502 while downloading the CA certificate, 24 tries in a row/,
      24,
    ],
    [
      "401 for the connection information, which Rancher answers while its caches sync",
      "curl: (22) The requested URL returned error: 401",
      "401 received while downloading Rancher connection information",
      /Rancher at https:\/\/ai-ear\.cn answered 401 while downloading Rancher connection information, 24 tries in a row over \d+ s: Rancher answers so while its caches sync/,
      24,
    ],
  ] as const) {
    it(`stops at once on what another try cannot change, and waits out what may pass: ${label}`, () => {
      const r = register(retryingAfter(curlLine, line));
      assert.equal(r.status, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`error: the agent installer was stopped: ${reason.source}`),
      );
      assert.equal(tries(r.stderr), expectedTries);
    });
  }

  it("counts tries of one kind in a row: a step install.sh gets through starts the count again", () => {
    const r = register(
      [
        "for i in 1 2; do",
        '  echo "[ERROR]  000 received while downloading the CA certificate. Sleeping for 5 seconds and trying again" >&2',
        "done",
        'echo "[INFO]  Successfully downloaded CA certificate" >&2',
        retryingAfter("", "000 received while testing Rancher connection"),
      ].join("\n"),
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /does not answer from this node \(no connection, 3 tries in a row\)/);
    assert.equal(tries(r.stderr), 2 + 3);
  });

  it("counts tries of one kind in a row: a 503 between 401s starts the count again", () => {
    const r = register(
      [
        "for i in $(seq 20); do",
        '  echo "[ERROR]  401 received while downloading Rancher connection information. Sleeping for 5 seconds and trying again" >&2',
        "done",
        'echo "[ERROR]  503 received while downloading Rancher connection information. Sleeping for 5 seconds and trying again" >&2',
        retryingAfter("", "401 received while downloading Rancher connection information"),
      ].join("\n"),
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /answered 401 while downloading Rancher connection information, 24 tries in a row/,
    );
    assert.equal(tries(r.stderr), 20 + 1 + 24);
  });
});
