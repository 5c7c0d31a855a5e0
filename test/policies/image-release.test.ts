import test from "ava";
import { imageReleases, parseEvaluationState, type EvaluationStateJson } from "../../policies/index.ts";

// Issue #22 item 1: a derived lane's windows are released onto a base that contains them, only where
// that base outlives the image — otherwise the image's holder keeps them.

const AS_OF = 1_800_000_000_000;
const observed = { kind: "observed" as const, atMs: AS_OF };

/** `raw` (r1) holds l0 1-60, `img` (r2) a coalesced image 1-60; a base through `baseCut` at `baseHolder`. */
function state(baseCut: number, baseHolder = "vault", scenarios: EvaluationStateJson["scenarios"] = [{ name: "r1 lost", losses: [{ domain: "region:r1", kind: "site_destruction" }], deadlineSec: 3600, required: true }]): EvaluationStateJson {
  return {
    volume: "v",
    asOfMs: AS_OF,
    staleAfterMs: 60_000,
    source: { site: "src", lanes: { l0: 60 } },
    commits: [{ lane: "l0", first: 1, last: 60, committedAtMs: AS_OF - 1000, bytesPerSeq: 4096 }],
    sites: [
      { id: "src", region: "r1", az: "a1", host: "h-src" },
      { id: "s-raw", region: "r1", az: "a2", host: "h-raw" },
      { id: "s-img", region: "r2", az: "b1", host: "h-img" },
      { id: "s-v", region: "r3", az: "c1", host: "h-v" },
    ],
    holders: [
      { id: "raw", site: "s-raw", claims: [{ lane: "l0", ranges: [[1, 60]], residency: "disk", evidence: observed }] },
      { id: "img", site: "s-img", claims: [], coalesced: [{ lane: "l0", ranges: [[1, 60]], residency: "disk", evidence: observed }] },
      { id: "vault", site: "s-v", claims: [] },
    ],
    bases: [{ id: "genesis", holder: "vault", cut: { l0: 0 }, bytes: 0 }, { id: `${baseHolder}.snap-1`, holder: baseHolder, cut: { l0: baseCut }, bytes: 0 }],
    keyAuthorities: [{ id: "kms", site: "s-v" }],
    recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
    scenarios,
  };
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
