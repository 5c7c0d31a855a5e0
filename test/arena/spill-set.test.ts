import test from "ava";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpillSet } from "../../arena/spill-set.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { ManualClock } from "./fixtures.ts";

test("the spill set starts a new file at rotateBytes, deletes a file once every record in it is released, and a reopen recovers the rest across files", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "spill-set-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const clock = new ManualClock();
  const path = join(dir, "spill.log");
  const { set } = await SpillSet.open(nodeFileLayer, path, clock, 10_000);
  const body = new Uint8Array(4_000).fill(1);
  for (let s = 1; s <= 9; s++) await set.append("v", "l0", s, s, body);
  const r = await set.flush(5_000);
  t.is(r.kind, "synced");
  const evidence = r.kind === "synced" ? [...r.evidence.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.offset - b.offset)) : [];
  t.is(evidence.length, 9);
  t.deepEqual((await readdir(dir)).sort(), ["spill.log", "spill.log.1", "spill.log.2"], "three records of 4 KB per 10 KB file");
  // Release everything in the first file: it goes; the newest file never does.
  for (const ev of evidence.filter((e) => e.file === path)) await set.release(ev);
  t.deepEqual((await readdir(dir)).sort(), ["spill.log.1", "spill.log.2"]);
  const bytes = set.bytes;
  await set.close();

  const again = await SpillSet.open(nodeFileLayer, path, clock, 10_000);
  t.deepEqual(
    again.recovered.map((x) => x.info.firstSeq).sort((a, b) => a - b),
    [4, 5, 6, 7, 8, 9],
  );
  t.is(again.set.bytes, bytes);
  const back = await again.set.read(again.recovered.find((x) => x.info.firstSeq === 7)!.evidence);
  t.is(back.info.firstSeq, 7);
  await again.set.close();
});
