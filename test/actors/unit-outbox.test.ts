/**
 * The writer's outbox on real files: flushes that overlap share fdatasyncs, and a file the outbox
 * rotates away from is made durable before the newer one takes the appends.
 */
import test from "ava";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UnitOutbox } from "../../actors/writer/unit-outbox.ts";
import { systemClock } from "../../core/clock.ts";
import { nodeFileLayer, type FileHandleLike, type FileLayer } from "../../core/file-layer.ts";
import { makeTransportUnit } from "../../lanes/transport-unit.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/index.ts";

/** The real file layer, noting per file whether a write happened since its last completed fdatasync, and counting fdatasyncs. */
class DirtyTrackingLayer implements FileLayer {
  readonly dirty = new Map<string, boolean>();
  datasyncs = 0;
  async open(path: string, opts?: { create?: boolean }): Promise<FileHandleLike> {
    const h = await nodeFileLayer.open(path, opts);
    return {
      path: h.path,
      read: (b, o, l, p) => h.read(b, o, l, p),
      write: async (b, o, l, p) => {
        this.dirty.set(path, true);
        await h.write(b, o, l, p);
      },
      datasync: async () => {
        const before = this.dirty.get(path);
        this.dirty.set(path, false);
        try {
          await h.datasync();
          this.datasyncs++;
        } catch (err) {
          if (before) this.dirty.set(path, true);
          throw err;
        }
      },
      sync: () => h.sync(),
      truncate: (n) => h.truncate(n),
      size: () => h.size(),
      close: () => h.close(),
    };
  }
  exists = (p: string) => nodeFileLayer.exists(p);
  mkdirp = (p: string) => nodeFileLayer.mkdirp(p);
  rename = (a: string, b: string) => nodeFileLayer.rename(a, b);
  unlink = (p: string) => nodeFileLayer.unlink(p);
  readdir = (p: string) => nodeFileLayer.readdir(p);
  syncDir = (p: string) => nodeFileLayer.syncDir(p);
}

function unit(seq: number, bytes = 4096) {
  const u = makeTransportUnit({ volume: "v", lane: "l0", term: 1, firstSeq: seq, lastSeq: seq, commitTs: [seq], payload: new Uint8Array(bytes).fill(seq & 0xff) });
  return { u, data: encodeMessage(unitSpec, u) };
}

test("sixteen overlapping outbox flushes share at most two fdatasyncs and each covers the units appended before it", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "outbox-share-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const layer = new DirtyTrackingLayer();
  const { outbox } = await UnitOutbox.open(layer, dir, systemClock);
  const before = layer.datasyncs;
  const flushes: Promise<void>[] = [];
  for (let s = 1; s <= 16; s++) {
    const { u, data } = unit(s);
    void outbox.append(u, data);
    flushes.push(outbox.flush());
  }
  await Promise.all(flushes);
  t.true(layer.datasyncs - before <= 2, `${layer.datasyncs - before} fdatasyncs`);
  t.deepEqual([...layer.dirty.values()].filter(Boolean), [], "every file written is synced since");
  await outbox.close();
  const again = await UnitOutbox.open(nodeFileLayer, dir, systemClock);
  t.deepEqual(again.recovered.map((r) => r.firstSeq), Array.from({ length: 16 }, (_, k) => k + 1));
  await again.outbox.close();
});

test("regression outbox rotation: units appended to a file the outbox then rotated away from are fdatasynced by the next flush", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "outbox-rotate-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const layer = new DirtyTrackingLayer();
  // Files of 6 KiB: the second 4 KiB unit rotates to a new file.
  const { outbox } = await UnitOutbox.open(layer, dir, systemClock, 6 * 1024);
  const a = unit(1);
  const b = unit(2);
  const c = unit(3);
  await outbox.append(a.u, a.data);
  await outbox.append(b.u, b.data);
  await outbox.append(c.u, c.data);
  await outbox.flush();
  t.true(layer.dirty.size >= 2, "the units went to more than one file");
  t.deepEqual([...layer.dirty].filter(([, d]) => d).map(([p]) => p), [], "no file holds writes the flush left unsynced");
  await outbox.close();
});
