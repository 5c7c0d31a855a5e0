import test, { type ExecutionContext } from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SmartWalVolume, VolumeLayout, type ExtentBarrier } from "../../volume/index.ts";
import { blockFor } from "./fixtures/block-pattern.ts";
import { runAndKill } from "./fixtures/run-and-kill.ts";

const WRITER = new URL("./fixtures/crash-writer.ts", import.meta.url).pathname;

/** 20 rounds of write → SIGKILL → reopen and check, with the writer using `barrier` on a volume of `layout`. */
async function sigkillRounds(t: ExecutionContext, barrier: ExtentBarrier, layout: VolumeLayout = VolumeLayout.Split): Promise<void> {
  t.timeout(300_000); // child processes start slowly on a loaded machine
  const dir = await mkdtemp(join(tmpdir(), "sigkill-vol-"));
  try {
    // Per LBA, every write ever issued (in LSN order) and the index of the newest acknowledged one.
    const history = new Map<number, { ids: number[]; acked: number }>();
    const lbaOf = new Map<number, number>();
    let seedRnd = 12345;
    let totalAcked = 0;
    for (let round = 0; round < 20; round++) {
      seedRnd = (seedRnd * 1103515245 + 12345) % 2 ** 31;
      // The writer's statements come from its statement log, not its stdout: see fixtures/statement-log.ts.
      const args = [dir, String(round * 1_000_000 + 1), String(seedRnd), `${barrier}:${layout}`];
      const lines = (await runAndKill(WRITER, args, `${dir}.statements`, 5 + (seedRnd % 120))).statements;
      for (const line of lines) {
        const [kind, a, b] = line.split(" ");
        if (kind === "issue") {
          const id = Number(a);
          const lba = Number(b);
          lbaOf.set(id, lba);
          const h = history.get(lba) ?? { ids: [], acked: -1 };
          h.ids.push(id);
          history.set(lba, h);
        } else if (kind === "ack") {
          for (const id of a!.split(",").map(Number)) {
            const h = history.get(lbaOf.get(id)!)!;
            h.acked = Math.max(h.acked, h.ids.indexOf(id));
            totalAcked++;
          }
        }
      }
      const vol = await SmartWalVolume.open(dir, { extentBarrier: barrier });
      try {
        t.deepEqual(vol.recovery.damaged, [], `round ${round}: damage reported`);
        for (const [lba, h] of history) {
          const got = Buffer.from(await vol.read(lba));
          // The newest acknowledged write, or any later (unacknowledged) one that also landed.
          const allowed = h.ids.slice(Math.max(0, h.acked));
          const ok = allowed.some((id) => got.equals(blockFor(id))) || (h.acked < 0 && got.every((x) => x === 0));
          if (!ok) t.fail(`round ${round}: LBA ${lba} lost its acknowledged write ${h.ids[h.acked]}`);
        }
      } finally {
        await vol.close();
      }
    }
    t.log(`acknowledged writes checked: ${totalAcked}`);
    t.true(totalAcked > 20);
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(`${dir}.statements`, { force: true });
  }
}

test("SIGKILL at a random moment, 20 rounds in a row: the reopened volume holds every acknowledged write", (t) => sigkillRounds(t, "per-batch"));

test("SIGKILL at a random moment, 20 rounds in a row, extent barrier at SyncCache: the reopened volume holds every acknowledged write and reports no damage", (t) =>
  sigkillRounds(t, "sync-cache"));

test("SIGKILL at a random moment, 20 rounds in a row, one-file layout with the extent barrier at SyncCache: the reopened volume holds every acknowledged write and reports no damage", (t) =>
  sigkillRounds(t, "sync-cache", VolumeLayout.OneFile));
