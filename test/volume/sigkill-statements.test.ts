import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runAndKill } from "./fixtures/run-and-kill.ts";

const BURST = new URL("./fixtures/statement-burst.ts", import.meta.url).pathname;

// The SIGKILL test once reported "round 10: LBA 20 lost its acknowledged write" although the volume
// was right: it took the writer's statements from stdout, whose tail a SIGKILL can lose (Node keeps
// what a full pipe does not take in the child's memory, and 'exit' can fire before the parent read
// the last chunk). A write whose "issue" line was lost but whose data landed then looked like wrong
// data. 5000 lines overflow the 64 KiB pipe, so stdout loses lines on every run here.
test("regression sigkill round 10 LBA 20: every statement a writer made before its SIGKILL reaches the checker", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "sigkill-statements-"));
  try {
    const count = 5000;
    const run = await runAndKill(BURST, [String(count)], join(dir, "statements"), 0);
    t.is(run.statements.length, count);
    t.deepEqual(run.statements.slice(-1), [`issue ${count - 1} ${(count - 1) % 64}`]);
    t.log(`stdout lines seen at 'exit': ${run.stdoutAtExit.length}, at 'close': ${run.stdoutAtClose.length} of ${count}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
