/**
 * Superseded holder incarnations that still send receipts are listed in the status document's
 * `fenced` section (issue #46), so an old process that kept running is seen, not taken for healthy.
 */
import test from "ava";
import { FENCED_SPEAKER_WINDOW_MS, FencedSpeakers } from "../../actors/controller/fenced-speakers.ts";
import { ReceiptError, ReceiptErrorCode } from "../../custody/receipt-error.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/wire/index.ts";
import { volumeStatusSpec, type VolumeStatus } from "../../transport/protocol/wire/volume-status.ts";

const stale = (holderId: string, incarnation: number, current: number) => new ReceiptError(ReceiptErrorCode.stale_incarnation, "superseded", { holderId, incarnation, current });

test("a stale-incarnation refusal lists the incarnation with the admitted one, its last sighting and its batches; other refusals are ignored", (t) => {
  const f = new FencedSpeakers();
  f.note(stale("h-e2", 2, 3), 1_000);
  f.note(stale("h-e2", 2, 3), 1_500);
  f.note(new ReceiptError(ReceiptErrorCode.bad_signature, "forged", { holderId: "h-x", incarnation: 1 }), 1_500);
  f.note(new Error("not a custody error"), 1_500);
  t.deepEqual(f.rows(2_000), [{ holder: "h-e2", incarnation: 2, admitted: 3, lastSeenAgeMs: 500, batches: 2 }]);
  t.deepEqual(f.rows(1_500 + FENCED_SPEAKER_WINDOW_MS + 1), [], "a process that went quiet drops off");
});

test("the status document carries the fenced section through its wire form, and leaves it out when empty", (t) => {
  const doc: VolumeStatus = {
    volume: "vol-b",
    controller: "ctl",
    asOfMs: 5,
    controlSeq: 9,
    acknowledged: [["l0", 4836]],
    survivingCut: null,
    scenarios: [],
    evidence: [{ holder: "h-e2", ageMs: 10, stale: false }],
    releasesCommitted: 0,
    fenced: [{ holder: "h-e2", incarnation: 2, admitted: 3, lastSeenAgeMs: 120, batches: 14 }],
  };
  t.deepEqual(decodeMessage(volumeStatusSpec, encodeMessage(volumeStatusSpec, doc)).fenced, doc.fenced);
  const { fenced: _, ...without } = doc;
  t.is(decodeMessage(volumeStatusSpec, encodeMessage(volumeStatusSpec, without)).fenced, undefined);
});
