/**
 * The runner the e2e tier runs the repository's workflows with (test/support/workflow.ts): jobs
 * in `needs` order, a matrix from a job's output, step outputs, secrets and variables in the
 * environment, a failed step ending its job, a refusal of any action it cannot stand for, and
 * actions/cache's restore, `cache-hit` and save after a job that succeeded.
 */
import * as assert from "assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { runWorkflow } from "../support/workflow";

function workflow(text: string): { file: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rke2r-workflow-"));
  const file = path.join(dir, "w.yml");
  fs.writeFileSync(file, text);
  return { file, dir };
}

describe("the workflow runner of the e2e tier", () => {
  it("runs jobs in needs order, over a matrix from a job's output, with secrets and variables", () => {
    const { file, dir } = workflow(`
jobs:
  second:
    needs: first
    strategy:
      matrix:
        item: \${{ fromJSON(needs.first.outputs.list) }}
    env:
      TOKEN: \${{ secrets.TOKEN }}
      MODE: \${{ vars.MODE || 'default-mode' }}
    steps:
      - uses: actions/checkout@v4
      - run: echo "\${{ matrix.item }} $TOKEN $MODE" >> seen.txt
  first:
    steps:
      - id: list
        run: echo 'list=["a","b"]' >> "$GITHUB_OUTPUT"
    outputs:
      list: \${{ steps.list.outputs.list }}
`);
    const run = runWorkflow(file, dir, { secrets: { TOKEN: "t0" } });
    assert.equal(run.ok, true, JSON.stringify(run.steps));
    assert.deepEqual(
      run.steps.map((s) => s.job),
      ["first", "second", "second", "second", "second"],
    );
    assert.equal(
      fs.readFileSync(path.join(dir, "seen.txt"), "utf8"),
      "a t0 default-mode\nb t0 default-mode\n",
    );
  });

  it("ends a job at its failed step and skips the jobs that need it", () => {
    const { file, dir } = workflow(`
jobs:
  a:
    steps:
      - run: "false"
      - run: touch ran-after-failure
  b:
    needs: [a]
    steps:
      - run: touch ran-b
`);
    const run = runWorkflow(file, dir, {});
    assert.equal(run.ok, false);
    assert.deepEqual(
      run.steps.map((s) => s.status),
      [1],
    );
    assert.ok(!fs.existsSync(path.join(dir, "ran-after-failure")));
    assert.ok(!fs.existsSync(path.join(dir, "ran-b")));
  });

  it("refuses an action it has no stand-in for, and an expression it cannot evaluate", () => {
    const unknown = workflow("jobs:\n  a:\n    steps:\n      - uses: some/action@v1\n");
    assert.throws(
      () => runWorkflow(unknown.file, unknown.dir, {}),
      /no stand-in for the action some\/action@v1/,
    );
    const expr = workflow("jobs:\n  a:\n    steps:\n      - run: echo ${{ toJSON(x) }}\n");
    assert.throws(
      () => runWorkflow(expr.file, expr.dir, {}),
      /cannot evaluate \$\{\{ toJSON\(x\) \}\}/,
    );
  });

  it("restores an actions/cache key a job saved, so a step skipped on cache-hit does not run; a failed job saves nothing", () => {
    const text = (tag: string, fail = false) => `
jobs:
  a:
    steps:
      - id: deps
        uses: actions/cache@v4
        with:
          path: deps
          key: deps-\${{ runner.os }}-${tag}-\${{ hashFiles('lock') }}
      - if: steps.deps.outputs.cache-hit != 'true'
        run: mkdir -p deps && date +%s%N > deps/made && echo made >> installs
      - run: cat deps/made${fail ? " && false" : ""}
`;
    const first = workflow(text("t1"));
    fs.writeFileSync(path.join(first.dir, "lock"), "v1");
    const miss = runWorkflow(first.file, first.dir, {});
    assert.equal(miss.ok, true, JSON.stringify(miss.steps));
    assert.match(miss.steps[0].out, /cache not found/);
    const made = fs.readFileSync(path.join(first.dir, "deps", "made"), "utf8");

    // Another checkout of the same lock file: restored, and the install step skipped.
    const second = workflow(text("t1"));
    fs.writeFileSync(path.join(second.dir, "lock"), "v1");
    const hit = runWorkflow(second.file, second.dir, {});
    assert.equal(hit.ok, true, JSON.stringify(hit.steps));
    assert.equal(hit.steps.length, 2);
    assert.match(hit.steps[0].out, /cache restored/);
    assert.equal(fs.readFileSync(path.join(second.dir, "deps", "made"), "utf8"), made);
    assert.ok(!fs.existsSync(path.join(second.dir, "installs")));

    // Another lock file is another key.
    fs.writeFileSync(path.join(second.dir, "lock"), "v2");
    const changed = runWorkflow(second.file, second.dir, {});
    assert.equal(changed.steps.length, 3);
    assert.equal(fs.readFileSync(path.join(second.dir, "installs"), "utf8"), "made\n");

    // A job that fails after a miss saves nothing: the next run misses again.
    const failing = workflow(text("t2", true));
    fs.writeFileSync(path.join(failing.dir, "lock"), "v1");
    assert.equal(runWorkflow(failing.file, failing.dir, {}).ok, false);
    const again = runWorkflow(failing.file, failing.dir, {});
    assert.match(again.steps[0].out, /cache not found/);
  });
});
