import test from "ava";
import { imageReleases, parseEvaluationState, type EvaluationStateJson } from "../../policies/index.ts";
import { coalescedState } from "./coalesced-fixture.ts";

// Issue #22 item 1: a derived lane's windows are released onto a base that contains them, only where
// that base outlives the image — otherwise the image's holder keeps them.

const r1Lost: EvaluationStateJson["scenarios"] = [{ name: "r1 lost", losses: [{ domain: "region:r1", kind: "site_destruction" }], deadlineSec: 3600, required: true }];

/** The image (r2) holds windows 1-60; a base through `baseCut` at `baseHolder`. */
function state(baseCut: number, baseHolder = "vault", scenarios = r1Lost): EvaluationStateJson {
  return coalescedState(60, scenarios, [{ id: `${baseHolder}.snap-1`, holder: baseHolder, cut: { l0: baseCut }, bytes: 0 }]);
}

const everyone = () => true;

test("the windows a base contains are released when the base outlives the image everywhere the image survives", (t) => {
  const [r, ...rest] = imageReleases(parseEvaluationState(state(40)), everyone);
  t.deepEqual(rest, []);
  t.is(r!.holder, "img");
  t.is(r!.lane, "l0");
  t.is(r!.ranges.toString(), "1-40");
  t.is(r!.base.id, "vault.snap-1");
  // The genesis base (cut 0) contains nothing.
  t.deepEqual(imageReleases(parseEvaluationState(state(0)), everyone), []);
});

test("nothing is released onto a base that some scenario takes while the image survives, nor onto an inactive base holder", (t) => {
  const vaultLost = [{ name: "r3 lost", losses: [{ domain: "region:r3", kind: "site_destruction" as const }], deadlineSec: 3600, required: false }];
  t.deepEqual(imageReleases(parseEvaluationState(state(40, "vault", vaultLost)), everyone), [], "an optional scenario counts too");
  // A base on the raw holder's disk: the raw side's loss takes it while the image lives on.
  t.deepEqual(imageReleases(parseEvaluationState(state(40, "raw")), everyone), []);
  t.deepEqual(imageReleases(parseEvaluationState(state(40)), (id) => id !== "vault"), []);
  // A scenario that takes the image too constrains nothing: the base need not outlive what is gone anyway.
  const both = [{ name: "r2 and r3 lost", losses: [{ domain: "region:r2", kind: "site_destruction" as const }, { domain: "region:r3", kind: "site_destruction" as const }], deadlineSec: 3600, required: true }];
  t.is(imageReleases(parseEvaluationState(state(40, "vault", both)), everyone)[0]?.ranges.toString(), "1-40");
});
