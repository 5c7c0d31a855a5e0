/**
 * Issue #47: on a fresh default volume `custody volume write` refused any write over 1,024 blocks
 * with volume_no_space while the documented limit (one write may span the copy-on-write spare)
 * allowed 8,192 on a 65,536-block volume: a write's records (one per block) must fit the WAL ring
 * at once, and the default ring had 1,024 slots. The default ring now holds the spare, and a
 * geometry whose ring is smaller than its spare says so as a bad request, never "no space".
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { runCliCaptured } from "../../cli/program.ts";
import { SmartWalVolume } from "../../volume/index.ts";

const custody = async (...args: string[]) => runCliCaptured(["volume", ...args]);
const lastJson = (out: string) => JSON.parse(out.trim().split("\n").pop()!) as Record<string, any>;

test("a fresh default 65,536-block volume takes one write of 8,192 blocks (its spare) through the CLI, reads it back, and refuses 8,193 as a bad request naming the limit", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "vol-capacity-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const v = join(root, "v");
  const created = await custody("create", v, "--blocks", "65536", "--json");
  t.is(created.code, 0, created.stderr);
  const g = lastJson(created.stdout);
  t.is(g.physicalBlocks - g.blockCount, 8192, "the default spare of 65,536 blocks");

  const w = await custody("write", v, "--lba", "1000", "--fill", "7", "--blocks", "8192", "--json");
  t.is(w.code, 0, w.stderr);
  t.deepEqual(lastJson(w.stdout), { lba: 1000, blocks: 8192, lsn: 8192, durableLsn: 8192 });
  // The same again over half of it: the overwrite needs the whole spare once more (copy-on-write).
  const again = await custody("write", v, "--lba", "5096", "--fill", "8", "--blocks", "8192", "--json");
  t.is(again.code, 0, again.stderr);

  const out = join(root, "read.bin");
  const r = await custody("read", v, "--lba", "999", "--count", "12290", "--out", out, "--json");
  t.is(r.code, 0, r.stderr);
  const blocks = lastJson(r.stdout).blocks as { lba: number; crc32: string; zero: boolean }[];
  const crcOf = (fill: number) => (crc32(new Uint8Array(4096).fill(fill)) >>> 0).toString(16).padStart(8, "0");
  const expected = (lba: number) => (lba < 1000 || lba >= 5096 + 8192 ? "zero" : lba < 5096 ? crcOf(7) : crcOf(8));
  const wrong = blocks.filter((b) => (b.zero ? "zero" : b.crc32) !== expected(b.lba));
  t.deepEqual(wrong.slice(0, 3), [], `${wrong.length} blocks read back wrong`);

  const over = await custody("write", v, "--lba", "0", "--fill", "9", "--blocks", "8193");
  t.is(over.code, 1);
  t.regex(over.stderr, /^error \[volume_bad_request\]: a single write may span at most 8192 blocks/i);
});

test("a volume created with a ring smaller than its spare limits one write to the ring, as a bad request (nothing written), not volume_no_space", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "vol-capacity-ring-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const dir = join(root, "v");
  await SmartWalVolume.create(dir, { blockCount: 16384, walCapacity: 1024 });
  const vol = await SmartWalVolume.open(dir);
  t.teardown(() => vol.close());
  t.is(await vol.write(0, new Uint8Array(1024 * 4096).fill(3)), 1024);
  const err = await t.throwsAsync(vol.write(0, new Uint8Array(1025 * 4096).fill(4)));
  t.regex((err as { code?: string }).code ?? "", /^volume_bad_request$/i);
  t.regex(err!.message, /at most 1024 blocks \(spare 2048, WAL ring 1024 slots\)/);
  t.is(vol.walWindow().head, 1024, "the refused write appended nothing");
});
