import test from "ava";
import { mkdtemp, rm, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpillStream } from "../../arena/spill-stream.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { ManualClock } from "./fixtures.ts";

async function tempFile(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "arena-spill-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, "spill.log");
}

test("reopen drops a complete but corrupted tail record and skips a damaged record in the middle", async (t) => {
  const clock = new ManualClock();
  const path = await tempFile(t);
  const s = (await SpillStream.open(nodeFileLayer, path, clock)).stream;
  const infos = [];
  for (let i = 0; i < 4; i++) infos.push(await s.append("v", "l0", i * 10, i * 10 + 9, new Uint8Array(300).fill(i)));
  t.is((await s.flush(1_000)).kind, "synced");
  await s.close();
  const bytes = await readFile(path);
  bytes[infos[1]!.offset + 100]! ^= 0x5a; // bit rot inside record 1
  bytes[bytes.length - 2]! ^= 0xff; // the last record's checksum no longer matches
  await writeFile(path, bytes);
  const { recovered, droppedBytes, stream } = await SpillStream.open(nodeFileLayer, path, clock);
  t.deepEqual(recovered.map((r) => r.info.firstSeq), [0, 20]);
  t.is(droppedBytes, infos[3]!.length);
  await stream.close();
});
test("a record whose write failed gets no evidence; the others in the batch still do", async (t) => {
  const clock = new ManualClock();
  const path = await tempFile(t);
  let calls = 0;
  const failing: typeof nodeFileLayer = {
    ...nodeFileLayer,
    async open(p, opts) {
      const h = await nodeFileLayer.open(p, opts);
      return { ...h, path: h.path, write: (b, o, l, pos) => (++calls === 1 ? Promise.reject(new Error("EIO")) : h.write(b, o, l, pos)) };
    },
  };
  const s = (await SpillStream.open(failing, path, clock)).stream;
  const bad = s.append("v", "l0", 1, 1, new Uint8Array(50));
  const good = await s.append("v", "l0", 2, 2, new Uint8Array(50));
  await t.throwsAsync(bad);
  const r = await s.flush(1_000);
  t.is(r.kind, "synced");
  if (r.kind === "synced") t.deepEqual([...r.evidence.keys()].map((i) => i.firstSeq), [good.firstSeq]);
  t.is(s.unsyncedCount, 0);
  await s.close();
});
test("regression sim seed 1115: a crash after the first synced flush keeps the spill stream (its new directory entry is synced)", async (t) => {
  const { CrashFileLayer } = await import("../../core/crash-file-layer.ts");
  const clock = new ManualClock();
  const files = new CrashFileLayer();
  await files.mkdirp("/spill");
  const { stream } = await SpillStream.open(files, "/spill/h3.log", clock);
  await stream.append("v0", "l0", 1, 4, new Uint8Array(100).fill(7));
  const flushed = await stream.flush(1_000);
  t.is(flushed.kind, "synced");
  // Power fails right after the sync: only what was made durable survives.
  const after = files.crashAt(files.opCount());
  const reopened = await SpillStream.open(after, "/spill/h3.log", clock);
  t.deepEqual(
    reopened.recovered.map((r) => [r.info.firstSeq, r.info.lastSeq]),
    [[1, 4]],
  );
});
