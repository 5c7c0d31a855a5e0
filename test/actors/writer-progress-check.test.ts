import test from "ava";
import { checkWriterProgress, ProgressRefusal, WriterProgressError } from "../../actors/controller/writer-progress-check.ts";
import type { WriterProgressMessage } from "../../transport/protocol/index.ts";

// Issue #46 (item 6): writer progress that is well-formed but cannot be the volume writer's
// (a lane twice, a lane the volume does not have, a run past its own head) is refused whole and
// counted; before, the controller took in the lanes it knew and skipped the rest silently.

const progress = (lanes: WriterProgressMessage["lanes"], volume = "vol-a"): WriterProgressMessage => ({ writer: "w1", volume, term: 1, lanes, at: 1 });
const lane = (name: string, head: number, runs: [number, number, number, number][] = []) => ({ lane: name, head, runs });

function refused(t: import("ava").ExecutionContext, p: WriterProgressMessage, code: ProgressRefusal): void {
  const err = t.throws(() => checkWriterProgress(p, "vol-a", ["l0", "l1"]), { instanceOf: WriterProgressError });
  t.is(err?.code, code);
}

test("progress of this volume's lanes, each once, runs within the head, is taken", (t) => {
  t.notThrows(() => checkWriterProgress(progress([lane("l0", 9, [[1, 9, 5, 512]]), lane("l1", 0)]), "vol-a", ["l0", "l1"]));
  t.notThrows(() => checkWriterProgress(progress([lane("l0", 2 ** 53 - 1, [[2 ** 53 - 2, 2 ** 53 - 1, 5, 512]])]), "vol-a", ["l0", "l1"]), "a huge head is the writer's to claim");
});

test("another volume, a lane twice, a lane the volume lacks, or a run past its head is refused", (t) => {
  refused(t, progress([lane("l0", 9)], "vol-b"), ProgressRefusal.wrongVolume);
  refused(t, progress([lane("l0", 9), lane("l1", 3), lane("l0", 2 ** 53 - 1)]), ProgressRefusal.duplicateLane);
  refused(t, progress([lane("l0", 9), lane("l9", 9)]), ProgressRefusal.unknownLane);
  refused(t, progress([lane("l0", 9, [[5, 10, 1, 512]])]), ProgressRefusal.runBeyondHead);
});
