import * as assert from "assert/strict";
import { restartPlan, RestartPlan } from "../../components/rke2-cluster/restart-plan";
import { renderArtifacts } from "../../infra/render";
import { estateModel } from "../support/lab-stack";
import { estateWith } from "./fixtures";

/** The plan `render` writes for a model, compared with an earlier plan. */
function planOf(model: ReturnType<typeof estateModel>, previous?: RestartPlan): RestartPlan {
  const configs = renderArtifacts(model).filter(
    (a) => a.kind === "rke2-server-config" || a.kind === "rke2-agent-config",
  );
  return restartPlan(
    model.management.name,
    model.management.version,
    configs.map((a) => ({
      node: a.target,
      role: a.kind === "rke2-server-config" ? ("server" as const) : ("agent" as const),
      config: a.content,
    })),
    previous,
  );
}

describe("restart-plan.json: which servers a change restarts, in which order", () => {
  const first = planOf(estateModel());

  it("orders servers as they join, each after the previous server's gate", () => {
    assert.deepEqual(
      first.steps.map((s) => [s.order, s.node, s.after]),
      [
        [1, "sza122020.local", "its node preparation"],
        [2, "sza122021.local", "join gate of sza122020.local"],
        [3, "sza122022.local", "join gate of sza122021.local"],
      ],
    );
    assert.ok(first.steps.every((s) => s.restarts === null));
  });

  it("restarts nothing when nothing changed", () => {
    const again = planOf(estateModel(), first);
    assert.ok(again.steps.every((s) => s.restarts === false && s.because.length === 0));
  });

  it("restarts every server on a config change that reaches every config.yaml", () => {
    const changed = planOf(
      estateModel(estateWith(["rke2", "etcdSnapshot", "retention"], 9)),
      first,
    );
    assert.deepEqual(
      changed.steps.map((s) => [s.node, s.restarts, s.because.join(",")]),
      [
        ["sza122020.local", true, "config.yaml changed"],
        ["sza122021.local", true, "config.yaml changed"],
        ["sza122022.local", true, "config.yaml changed"],
      ],
    );
  });

  it("names the version change on every step", () => {
    const previous = { ...first, version: "v1.34.9+rke2r1" };
    const changed = planOf(estateModel(), previous);
    assert.ok(changed.steps.every((s) => s.restarts === true));
    assert.equal(changed.previousVersion, "v1.34.9+rke2r1");
    assert.match(changed.steps[0].because[0], /^version v1\.34\.9\+rke2r1 -> v1\.3/);
  });
});
