import test from "ava";
import fc from "fast-check";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { repairEstimate } from "../../actors/repair/repair-estimate.ts";
import {
  activationTransfers,
  copySources,
  laneRangesOf,
  missingCoverage,
  protectionIds,
  rangesOf,
  replacementCovers,
} from "../../actors/repair/repair-plan.ts";
import {
  failureOf,
  initialRepairContext,
  receiptTimeoutFailure,
  repairOutcomeOf,
  repairReportOf,
  repairSettingsOf,
  replacementFromData,
  type RepairContext,
} from "../../actors/repair/repair-state.ts";
import { baseHoldings, deepFreeze, holding, recovery, settings, viewOf } from "./repair-fixture.ts";

// The repair's decisions and data, with no NATS, no files and no clock.

test("what is missing: the failed holder's retained ranges less what the log released for it, per lane", (t) => {
  const view = deepFreeze(viewOf());
  const missing = missingCoverage(view, settings);
  t.deepEqual(laneRangesOf(missing), { l0: [[1, 9], [21, 40]], l1: [] });
  t.deepEqual(laneRangesOf(missingCoverage(view, { lanes: ["l0"], failed: ["h-a"] })), { l0: [[1, 30]] });
  t.deepEqual(laneRangesOf(missingCoverage(view, { lanes: ["l0"], failed: [] })), { l0: [] });
});

test("lane ranges go to plain [first, last] pairs and back unchanged", (t) => {
  const pair = fc.tuple(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 0, max: 50 }));
  fc.assert(
    fc.property(fc.array(pair, { maxLength: 12 }), (pairs) => {
      const set = RangeSet.from(pairs.map(([first, len]) => [first, first + len] as const));
      const plain = laneRangesOf({ l0: set });
      t.deepEqual(JSON.parse(JSON.stringify(plain)), plain);
      return rangesOf(plain, "l0").equals(set) && rangesOf(plain, "l9").isEmpty;
    }),
  );
});

test("copy sources: fresh receipts of active admitted incarnations, never the failed holder nor the replacement", (t) => {
  const holdings = [
    ...baseHoldings(),
    holding("h-new", "l0", RangeSet.of(1, 40)),
    holding("h-c", "l0", RangeSet.of(1, 40)),
    holding("h-a", "l1", RangeSet.of(1, 40)),
  ];
  const view = deepFreeze(viewOf(holdings));
  const who = { failed: settings.failed, replacement: "h-new" };
  const sources = copySources(view, "l0", RangeSet.from([[1, 9], [21, 40]]), who, 500);
  // h-b holds all 29 missing units, h-a only 1..9 and 21..30: the larger first.
  t.deepEqual(
    sources.map((s) => [s.holderId, s.retained.toJSON()]),
    [
      ["h-b", [[1, 9], [21, 40]]],
      ["h-a", [[1, 9], [21, 30]]],
    ],
  );
  t.deepEqual(copySources(view, "l0", RangeSet.of(1, 5), who, 1_001), [], "receipts older than staleAfterMs count for nothing");
  const wrongIncarnation = viewOf([holding("h-b", "l0", RangeSet.of(1, 40), 0, 1)]);
  t.deepEqual(copySources(wrongIncarnation, "l0", RangeSet.of(1, 5), who, 0), [], "an earlier incarnation is no source");
});

test("copy sources of equal size are ordered by holder id", (t) => {
  const view = viewOf([holding("h-b", "l0", RangeSet.of(1, 5), 0, 2), holding("h-a", "l0", RangeSet.of(1, 5))]);
  const sources = copySources(view, "l0", RangeSet.of(1, 5), { failed: [], replacement: "h-new" }, 0);
  t.deepEqual(
    sources.map((s) => s.holderId),
    ["h-a", "h-b"],
  );
});

test("the replacement's receipts cover the missing ranges only when every lane's are all retained", (t) => {
  const missing = deepFreeze({ l0: [[1, 9], [21, 40]] as [number, number][], l1: [] as [number, number][] });
  t.false(replacementCovers(viewOf(), missing, "h-new"));
  const partly = viewOf([...baseHoldings(), holding("h-new", "l0", RangeSet.of(1, 30))]);
  t.false(replacementCovers(partly, missing, "h-new"));
  const split = [holding("h-new", "l0", RangeSet.of(1, 9)), holding("h-new", "l0", RangeSet.of(21, 40))];
  t.true(replacementCovers(viewOf([...baseHoldings(), ...split]), missing, "h-new"), "receipts add up");
  t.false(replacementCovers(viewOf(split), missing, "h-a"), "someone else's receipts do not count");
});

test("activation: one transfer per lane with missing ranges and failed holder, in lane then holder order", (t) => {
  const missing = deepFreeze({ l0: [[1, 9]] as [number, number][], l1: [] as [number, number][], l2: [[4, 4]] as [number, number][] });
  const task = { repairId: "r1", lanes: ["l2", "l0", "l1"], failed: ["h-x", "h-y"] };
  const transfers = activationTransfers(task, "h-new", missing);
  t.deepEqual(
    transfers.map((x) => [x.transferId, x.lane, x.fromHolder, x.toHolder, x.ranges.toJSON()]),
    [
      ["r1-l2-h-x", "l2", "h-x", "h-new", [[4, 4]]],
      ["r1-l2-h-y", "l2", "h-y", "h-new", [[4, 4]]],
      ["r1-l0-h-x", "l0", "h-x", "h-new", [[1, 9]]],
      ["r1-l0-h-y", "l0", "h-y", "h-new", [[1, 9]]],
    ],
  );
  t.deepEqual(activationTransfers(task, "h-new", {}), [], "nothing missing, nothing to activate");
});

test("the protections ended are one per surveyed lane, empty lanes included", (t) => {
  t.deepEqual(protectionIds("r1", { l0: [[1, 2]], l1: [] }), ["r1-l0", "r1-l1"]);
  t.deepEqual(protectionIds("r1", {}), []);
});

test("the initial context is the settings alone, as JSON-safe data (the replacement's key in base64)", (t) => {
  const withPorts = { ...settings, port: {}, transport: {}, clock: { now: () => 5 } };
  const c = initialRepairContext(withPorts);
  t.deepEqual(JSON.parse(JSON.stringify(c)), c);
  t.deepEqual(Object.keys(repairSettingsOf(withPorts)).sort(), Object.keys(settings).sort());
  t.deepEqual(c.task.replacement, { holderId: "h-new", incarnation: 1, publicKey: "AQID+g==", failureDomain: "az2" });
  t.deepEqual(replacementFromData(c.task.replacement), settings.replacement);
  t.deepEqual(c.missing, {});
  t.is(c.startedAt, undefined, "no time is read when the context is made");
});

function finishedContext(): RepairContext {
  return {
    ...initialRepairContext(settings),
    startedAt: 1_000,
    missing: { l0: [[1, 9]], l1: [] },
    recovery,
    copied: { units: 9, bytes: 4_000 },
    receiptsDueAt: 1_300,
    finished: { controlSeq: 42, at: 1_750 },
  };
}

test("the report: measured time between the survey's start and the activation's end, next to the estimate", (t) => {
  const c = deepFreeze(finishedContext());
  t.deepEqual(repairReportOf(c), {
    repairId: "repair-v1-7",
    missing: { l0: [[1, 9]], l1: [] },
    copiedUnits: 9,
    copiedBytes: 4_000,
    measuredMs: 750,
    estimate: repairEstimate(recovery, 4_000, 1_000),
    controlSeq: 42,
  });
  t.deepEqual(repairOutcomeOf(c), { repairId: "repair-v1-7", report: repairReportOf(c)! });
  t.is(repairReportOf({ ...c, finished: undefined }), undefined, "no report before activation");
});

test("a recorded failure is the outcome, never a report; errors without a code are repair_failed", (t) => {
  const failure = failureOf("copying", new CustodyError("repair_source_lost", "gone", {}));
  t.deepEqual(failure, { step: "copying", code: "repair_source_lost", message: "gone" });
  const c = deepFreeze({ ...finishedContext(), error: failure });
  t.deepEqual(repairOutcomeOf(c), { repairId: "repair-v1-7", failure });
  t.deepEqual(failureOf("admitting", "refused"), { step: "admitting", code: "repair_failed", message: "refused" });
  t.deepEqual(failureOf("admitting", undefined), { step: "admitting", code: "repair_failed", message: "undefined" });
  t.deepEqual(failureOf("surveying", { code: 7 }), { step: "surveying", code: "repair_failed", message: "[object Object]" });
  const timeout = receiptTimeoutFailure(c);
  t.is(timeout.step, "awaiting_receipts");
  t.is(timeout.code, "repair_timeout");
});
