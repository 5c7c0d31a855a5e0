import test from "ava";
import { heldByRetention, retentionFloor } from "../../actors/controller/retention-window.ts";
import { foldCommitHistory } from "../../policies/commit-log.ts";
import { RangeSet } from "../../lanes/range-set.ts";

const commits = [
  { lane: "l0", first: 1, last: 10, committedAtMs: 1_000, bytesPerSeq: 10 },
  { lane: "l0", first: 11, last: 20, committedAtMs: 5_000, bytesPerSeq: 10 },
];
const w = { windowMs: 3_000 };

test("only sequences committed within the window are held, until the newest of them leaves it", (t) => {
  t.deepEqual(heldByRetention(w, commits, "l0", RangeSet.of(1, 20), 6_000, -Infinity), { held: RangeSet.of(11, 20), untilMs: 8_000 });
  t.true(heldByRetention(w, commits, "l0", RangeSet.of(1, 20), 8_000, -Infinity).held.isEmpty, "the window is over at commit + window");
});

test("a sequence without a known commit time is held as if committed when the controller started, never taken as old", (t) => {
  const r = heldByRetention(w, commits, "l0", RangeSet.of(21, 25), 6_000, 4_000);
  t.deepEqual(r, { held: RangeSet.of(21, 25), untilMs: 7_000 });
});

test("commit history inside the window is never folded (a fold keeps the oldest time and would end the window early)", (t) => {
  const floor = retentionFloor(w, commits, ["l0"], 6_000);
  t.deepEqual(floor, { l0: 10 });
  const folded = foldCommitHistory(commits, { l0: Math.min(20, floor.l0!) }, { l0: 0 }, 1_000);
  t.is(folded.find((c) => c.first <= 15 && 15 <= c.last)!.committedAtMs, 5_000);
});
