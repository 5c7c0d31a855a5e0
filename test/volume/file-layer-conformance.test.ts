import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import { nodeFileLayer, type FileLayer } from "../../core/file-layer.ts";

// One contract, two implementations: the crash layer must behave like real files while nothing crashes.
const layers: [string, () => Promise<{ fl: FileLayer; dir: string; done: () => Promise<void> }>][] = [
  [
    "node fs",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "fl-conf-"));
      return { fl: nodeFileLayer, dir, done: () => rm(dir, { recursive: true, force: true }) };
    },
  ],
  ["crash layer", async () => ({ fl: new CrashFileLayer(), dir: "/conf", done: async () => undefined })],
];

for (const [name, make] of layers) {
  test(`${name}: a write reads back, a read past EOF is short, and a gap reads as zeros`, async (t) => {
    const { fl, dir, done } = await make();
    try {
      await fl.mkdirp(dir);
      const f = await fl.open(`${dir}/a`, { create: true });
      await f.write(new Uint8Array([1, 2, 3, 4]), 1, 2, 10);
      t.is(await f.size(), 12);
      const buf = new Uint8Array(8).fill(9);
      t.is(await f.read(buf, 0, 8, 8), 4);
      t.deepEqual([...buf], [0, 0, 2, 3, 9, 9, 9, 9]);
      t.is(await f.read(buf, 0, 8, 100), 0);
      await f.datasync();
      await f.close();
    } finally {
      await done();
    }
  });

  test(`${name}: truncate grows with zeros and shrinks, and a reopened file keeps its bytes`, async (t) => {
    const { fl, dir, done } = await make();
    try {
      await fl.mkdirp(dir);
      const f = await fl.open(`${dir}/b`, { create: true });
      await f.write(new Uint8Array([7, 7, 7]), 0, 3, 0);
      await f.truncate(2);
      t.is(await f.size(), 2);
      await f.truncate(6);
      const buf = new Uint8Array(6);
      await f.read(buf, 0, 6, 0);
      t.deepEqual([...buf], [7, 7, 0, 0, 0, 0]);
      await f.sync();
      await f.close();
      const g = await fl.open(`${dir}/b`);
      t.is(await g.size(), 6);
      await g.close();
    } finally {
      await done();
    }
  });

  test(`${name}: opening a missing file without create fails with ENOENT`, async (t) => {
    const { fl, dir, done } = await make();
    try {
      await fl.mkdirp(dir);
      const err = await t.throwsAsync(fl.open(`${dir}/missing`));
      t.is((err as NodeJS.ErrnoException).code, "ENOENT");
      t.false(await fl.exists(`${dir}/missing`));
    } finally {
      await done();
    }
  });

  test(`${name}: rename, readdir and unlink manage directory entries`, async (t) => {
    const { fl, dir, done } = await make();
    try {
      await fl.mkdirp(dir);
      const f = await fl.open(`${dir}/x`, { create: true });
      await f.close();
      await fl.rename(`${dir}/x`, `${dir}/y`);
      await fl.syncDir(dir);
      t.deepEqual(await fl.readdir(dir), ["y"]);
      t.true(await fl.exists(`${dir}/y`));
      await fl.unlink(`${dir}/y`);
      t.deepEqual(await fl.readdir(dir), []);
    } finally {
      await done();
    }
  });
}

test("crash layer: an unsynced write is lost when the crash drops it and kept when the crash keeps it", async (t) => {
  const fl = new CrashFileLayer();
  const f = await fl.open("/d/f", { create: true });
  await fl.syncDir("/d");
  await f.write(new Uint8Array(4).fill(1), 0, 4, 0);
  await f.datasync();
  await f.write(new Uint8Array(4).fill(2), 0, 4, 0);
  const at = fl.opCount();
  const read = async (layer: CrashFileLayer) => {
    const h = await layer.open("/d/f");
    const b = new Uint8Array(4);
    await h.read(b, 0, 4, 0);
    return [...b];
  };
  t.deepEqual(await read(fl.crashAt(at)), [1, 1, 1, 1]);
  t.deepEqual(await read(fl.crashAt(at, { keep: "all" })), [2, 2, 2, 2]);
  t.is(fl.pendingWritesAt(at).length, 1);
});

test("crash layer: a torn 4 KiB write lands only the chosen 512-byte sectors", async (t) => {
  const fl = new CrashFileLayer();
  const f = await fl.open("/d/f", { create: true });
  await f.truncate(4096);
  await f.datasync();
  await fl.syncDir("/d");
  await f.write(new Uint8Array(4096).fill(5), 0, 4096, 0);
  const [w] = fl.pendingWritesAt(fl.opCount());
  const crashed = fl.crashAt(fl.opCount(), { keep: "all", tear: new Map([[w!.id, [0, 3]]]) });
  const h = await crashed.open("/d/f");
  const b = new Uint8Array(4096);
  await h.read(b, 0, 4096, 0);
  const landed = Array.from({ length: 8 }, (_, s) => b[s * 512] === 5);
  t.deepEqual(landed, [true, false, false, true, false, false, false, false]);
});

test("crash layer: a file created but never made durable by syncDir is gone after a crash", async (t) => {
  const fl = new CrashFileLayer();
  const f = await fl.open("/d/new", { create: true });
  await f.write(new Uint8Array([1]), 0, 1, 0);
  await f.datasync();
  t.false(await fl.crashAt(fl.opCount()).exists("/d/new"));
  await fl.syncDir("/d");
  t.true(await fl.crashAt(fl.opCount()).exists("/d/new"));
});

test("crash layer: a broken sync (lying disk) leaves writes undurable", async (t) => {
  const fl = new CrashFileLayer(undefined, { brokenSync: (p) => p.endsWith("/liar") });
  const f = await fl.open("/d/liar", { create: true });
  await fl.syncDir("/d");
  await f.write(new Uint8Array([3]), 0, 1, 0);
  await f.datasync();
  const h = await fl.crashAt(fl.opCount()).open("/d/liar");
  t.is(await h.size(), 0);
});
