import test from "ava";
import { confirmedCuts, StatusRefusedError } from "../../actors/writer/confirmed-cut.ts";
import type { VolumeStatus } from "../../transport/protocol/index.ts";

// Issue #46 (item 6): a status document from the controller's credentials confirming a cut past
// everything the writer ever assigned (2^53-1) moved the writer's confirmed cut there, and the
// writer then dropped copies no scenario covered yet; one for another volume was ignored uncounted.

const doc = (cut: number, volume = "vol-a"): VolumeStatus => ({
  volume,
  controller: "ctl-1",
  asOfMs: 1,
  controlSeq: 1,
  acknowledged: [["l0", cut]],
  survivingCut: [["l0", cut]],
  scenarios: [{ name: "az-loss", kind: "scenario", required: true, cut: [["l0", cut]], lostSeqs: 0, lostBytes: 0, oldestLostAgeMs: 0, rtoSec: 1, deadlineSec: 1, meetsDeadline: true, destination: "d", evidence: "observed", contributors: [], flags: [] }],
  evidence: [],
  releasesCommitted: 0,
});
const lanes = [{ spec: { lane: "l0" }, next: 11 }, { spec: { lane: "l1" }, next: 1 }];

test("the confirmed cuts of the writer's lanes are taken up to its head", (t) => {
  t.deepEqual(confirmedCuts(doc(10), "vol-a", lanes).map(([l, c]) => [l.spec.lane, c]), [["l0", 10], ["l1", -1]]);
});

test("a status of another volume, or confirming a cut past the writer's head, is refused whole", (t) => {
  t.is(t.throws(() => confirmedCuts(doc(10, "vol-b"), "vol-a", lanes), { instanceOf: StatusRefusedError })?.code, "wrong_volume");
  t.is(t.throws(() => confirmedCuts(doc(11), "vol-a", lanes), { instanceOf: StatusRefusedError })?.code, "cut_beyond_head");
  t.is(t.throws(() => confirmedCuts(doc(Number.MAX_SAFE_INTEGER), "vol-a", lanes), { instanceOf: StatusRefusedError })?.code, "cut_beyond_head");
});
