/**
 * The repair protocol's pure parts (issue #18): which requests the controller answers, strict
 * decoding of the repair wire kinds, and the repair subjects. No NATS server.
 */
import test from "ava";
import { Encoder } from "@msgpack/msgpack";
import { checkRepairRequest, RepairRequestRefusedError, type DelegatedRepair, type RepairRequest } from "../../actors/controller/repair-request-check.ts";
import { outcomeFromWire, outcomeToWire, viewFromWire, viewToWire } from "../../actors/repair/repair-wire.ts";
import { decodeMessage } from "../../transport/protocol/wire/codec.ts";
import { repairAdmitSpec, repairOutcomeSpec } from "../../transport/protocol/wire/repair-messages.ts";
import { InvalidSubjectError, parseSubjectOf, RepairOp, repairSubject, repairTaskSubject } from "../../transport/protocol/subjects.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { WireError } from "../../transport/protocol/wire/wire-error.ts";

const key = new Uint8Array(32).fill(3);
const repair: DelegatedRepair = { repairId: "repair-v1-7", lanes: ["l0"], failed: ["h1"], replacement: { holderId: "h9", incarnation: 1, publicKey: key, failureDomain: "r/az/h9" } };
const open = new Map([[repair.repairId, repair]]);

test("the requests of a repair the controller handed out, within its lanes, failed holders and replacement, are accepted", (t) => {
  const ok: RepairRequest[] = [
    { op: "view", repairId: "repair-v1-7", lanes: ["l0"] },
    { op: "admit", repairId: "repair-v1-7", replacement: { ...repair.replacement, publicKey: new Uint8Array(key) } },
    { op: "activate", repairId: "repair-v1-7", transferId: "repair-v1-7-l0-h1", lane: "l0", fromHolder: "h1", toHolder: "h9" },
    { op: "protect", repairId: "repair-v1-7", id: "repair-v1-7-l0", lane: "l0" },
    { op: "unprotect", repairId: "repair-v1-7", id: "repair-v1-7-l0" },
  ];
  for (const r of ok) t.is(checkRepairRequest(open, r), repair, r.op);
});

test("a request outside the repair it names is refused with repair_request_refused", (t) => {
  const bad: RepairRequest[] = [
    { op: "view", repairId: "repair-v1-8", lanes: ["l0"] },
    { op: "view", repairId: "repair-v1-7", lanes: ["l1"] },
    { op: "admit", repairId: "repair-v1-7", replacement: { ...repair.replacement, incarnation: 2 } },
    { op: "admit", repairId: "repair-v1-7", replacement: { ...repair.replacement, publicKey: new Uint8Array(32).fill(4) } },
    { op: "activate", repairId: "repair-v1-7", transferId: "repair-v1-7-l0-h2", lane: "l0", fromHolder: "h2", toHolder: "h9" },
    { op: "activate", repairId: "repair-v1-7", transferId: "repair-v1-7-l0-h1", lane: "l0", fromHolder: "h1", toHolder: "h2" },
    { op: "activate", repairId: "repair-v1-7", transferId: "other", lane: "l0", fromHolder: "h1", toHolder: "h9" },
    { op: "protect", repairId: "repair-v1-7", id: "someone-else", lane: "l0" },
    { op: "unprotect", repairId: "repair-v1-7", id: "recovery-of-another" },
  ];
  for (const r of bad) {
    const err = t.throws(() => checkRepairRequest(open, r), { instanceOf: RepairRequestRefusedError }, JSON.stringify(r));
    t.is(err?.code, "repair_request_refused");
  }
});

test("a repair wire body with a field the schema does not know is refused by the strict decoder", (t) => {
  const bytes = new Encoder().encode({ k: "repair-admit", v: 1, b: { repairId: "repair-v1-7", replacement: { ...repair.replacement }, sneaky: true } });
  const err = t.throws(() => decodeMessage(repairAdmitSpec, bytes), { instanceOf: WireError });
  t.is(err?.code, "invalid_field");
});

test("a view and an outcome survive the wire unchanged, an infinite estimate included", (t) => {
  const view = {
    holders: { h1: { status: "failed", incarnation: 2 } },
    lanes: { l0: { released: { h1: RangeSet.of(1, 4) }, responsible: { h1: RangeSet.of(1, 99) } } },
    holdings: [{ holderId: "h1", incarnation: 2, lane: "l0", retained: RangeSet.of(5, 40), issuedAt: 1000 }],
    staleAfterMs: 30_000,
    recovery: { destination: "s", detectSec: 1, authorizeSec: 2, acquireCapacitySec: 3, persistSec: 4, validateSec: 5 },
  };
  const back = viewFromWire(viewToWire(view));
  t.is(back.holdings[0]!.retained.toString(), view.holdings[0]!.retained.toString());
  t.is(back.lanes.l0!.released.h1!.toString(), RangeSet.of(1, 4).toString());
  const estimate = { detectSec: 1, authorizeSec: 2, acquireCapacitySec: 3, transferSec: Infinity, persistSec: 4, validateSec: 5, missingBytes: 10, totalSec: Infinity };
  const outcome = { repairId: "repair-v1-7", report: { repairId: "repair-v1-7", missing: { l0: [[5, 40]] as [number, number][] }, copiedUnits: 2, copiedBytes: 10, measuredMs: 12, estimate, controlSeq: 9 } };
  const wire = decodeMessage(repairOutcomeSpec, new Encoder().encode({ k: "repair-outcome", v: 1, b: outcomeToWire(outcome) }));
  t.deepEqual(outcomeFromWire(wire), outcome);
});

test("repair subjects carry the volume and op as tokens, and a wildcard or unknown token is not a repair subject", (t) => {
  t.is(repairSubject("v1", RepairOp.Admit), "custody.v1.repair.v1.admit");
  t.is(repairTaskSubject("v1"), "custody.v1.repair-task.v1");
  t.deepEqual(parseSubjectOf("repair", "custody.v1.repair.v1.view"), { kind: "repair", volume: "v1", op: "view" });
  t.throws(() => parseSubjectOf("repair", "custody.v1.repair.v1.*"), { instanceOf: InvalidSubjectError });
  t.throws(() => parseSubjectOf("repair", "custody.v1.repair.v1"), { instanceOf: InvalidSubjectError });
});
