import test from "ava";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";

async function write(files: CrashFileLayer, path: string, at: number, bytes: number[], sync = true): Promise<void> {
  const fh = await files.open(path, { create: true });
  await fh.write(Uint8Array.from(bytes), 0, bytes.length, at);
  if (sync) await fh.datasync();
  await fh.close();
}

async function read(files: CrashFileLayer, path: string): Promise<number[]> {
  const fh = await files.open(path);
  const out = new Uint8Array(await fh.size());
  await fh.read(out, 0, out.length, 0);
  await fh.close();
  return [...out];
}

test("a layer reopened after a crash shares no bytes with the crashed layer, nor with a second crash of it", async (t) => {
  const files = new CrashFileLayer();
  await write(files, "/d/a", 0, [1, 2, 3]);
  await files.syncDir("/d");
  const after = files.crashAt(files.opCount());
  const again = files.crashAt(files.opCount());
  await write(after, "/d/a", 1, [9]);
  await write(files, "/d/a", 2, [8]);
  t.deepEqual(await read(after, "/d/a"), [1, 9, 3]);
  t.deepEqual(await read(files, "/d/a"), [1, 2, 8]);
  t.deepEqual(await read(again, "/d/a"), [1, 2, 3]);
  // The reopened layer's log still holds what it was given (its first op), unchanged by later writes.
  t.deepEqual(await read(after.crashAt(1), "/d/a"), [1, 2, 3]);
});

test("two durable names of one file come back as two files after a crash: writing one leaves the other as it was", async (t) => {
  const files = new CrashFileLayer();
  await write(files, "/d/a", 0, [1, 2, 3]);
  await files.syncDir("/d");
  // Moved to another directory and only the new directory synced: both names are durable.
  await files.rename("/d/a", "/e/b");
  await files.syncDir("/e");
  const after = files.crashAt(files.opCount());
  t.deepEqual(await after.readdir("/d"), ["a"]);
  t.deepEqual(await after.readdir("/e"), ["b"]);
  await write(after, "/e/b", 0, [7]);
  t.deepEqual(await read(after, "/e/b"), [7, 2, 3]);
  t.deepEqual(await read(after, "/d/a"), [1, 2, 3]);
});
