import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SmartWalVolume } from "../../volume/index.ts";
import { blockFor } from "./fixtures/block-pattern.ts";
import { runAndKill } from "./fixtures/run-and-kill.ts";

const BURST = new URL("./fixtures/statement-burst.ts", import.meta.url).pathname;
const WRITER = new URL("./fixtures/crash-writer.ts", import.meta.url).pathname;

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

test("regression sigkill round 10 LBA 20: a SIGKILLed writer whose parent stopped reading its stdout still holds every write acknowledged in its statement log", async (t) => {
  t.timeout(120_000);
  const dir = await mkdtemp(join(tmpdir(), "sigkill-stalled-"));
  try {
    // 3 s without reading: the writer's stdout fills the pipe and Node queues the rest in the child.
    const run = await runAndKill(WRITER, [join(dir, "vol"), "1", "777", "per-batch"], join(dir, "statements"), 3000, true);
    const issues = (ls: string[]) => ls.filter((l) => l.startsWith("issue "));
    t.log(`issue statements: ${issues(run.statements).length} in the log, ${issues(run.stdoutAtClose).length} on stdout`);
    const lbaOf = new Map<number, number>();
    const history = new Map<number, { ids: number[]; acked: number }>();
    for (const line of run.statements) {
      const [kind, a, b] = line.split(" ");
      if (kind === "issue") {
        lbaOf.set(Number(a), Number(b));
        const h = history.get(Number(b)) ?? { ids: [], acked: -1 };
        h.ids.push(Number(a));
        history.set(Number(b), h);
      } else if (kind === "ack") {
        for (const id of a!.split(",").map(Number)) {
          const h = history.get(lbaOf.get(id)!)!;
          h.acked = Math.max(h.acked, h.ids.indexOf(id));
        }
      }
    }
    t.true([...history.values()].some((h) => h.acked >= 0));
    const vol = await SmartWalVolume.open(join(dir, "vol"), { extentBarrier: "per-batch" });
    try {
      t.deepEqual(vol.recovery.damaged, []);
      for (const [lba, h] of history) {
        const got = Buffer.from(await vol.read(lba));
        const allowed = h.ids.slice(Math.max(0, h.acked));
        const ok = allowed.some((id) => got.equals(blockFor(id))) || (h.acked < 0 && got.every((x) => x === 0));
        if (!ok) t.fail(`LBA ${lba} lost its acknowledged write ${h.ids[h.acked]}`);
      }
    } finally {
      await vol.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
