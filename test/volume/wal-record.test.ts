import test from "ava";
import fc from "fast-check";
import { crc32 } from "node:zlib";
import { encodeCheckpoint } from "../../volume/checkpoint.ts";
import { decodeCheckpoint, decodeRecord, encodeRecord, RECORD_SIZE, RecordFlag, RecordProblem } from "../../volume/index.ts";
import { coalesceWrites, planCommit } from "../../volume/commit-plan.ts";

const record = fc
  .record({
    lsn: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    epoch: fc.nat(),
    flag: fc.constantFrom(RecordFlag.Write, RecordFlag.Trim),
    lba: fc.nat(),
    blockCount: fc.integer({ min: 1, max: 0xffff }),
    physicalOffset: fc.nat(),
    dataCrc: fc.nat(0xffffffff),
    behind: fc.nat(),
  })
  // The durable watermark is always below the record's own LSN.
  .map(({ behind, ...r }) => ({ ...r, durableLsn: Math.max(0, r.lsn - 1 - behind) }));

test("a metadata record is 64 bytes and round-trips exactly", (t) => {
  fc.assert(
    fc.property(record, (r) => {
      const slot = new Uint8Array(RECORD_SIZE);
      encodeRecord(r, slot);
      t.deepEqual(decodeRecord(slot), r);
    }),
  );
  t.is(RECORD_SIZE, 64);
});

test("any single flipped bit makes a record invalid (I2), and zeros read as an empty slot", (t) => {
  fc.assert(
    fc.property(record, fc.nat(RECORD_SIZE * 8 - 1), (r, bit) => {
      const slot = new Uint8Array(RECORD_SIZE);
      encodeRecord(r, slot);
      slot[bit >> 3] = slot[bit >> 3]! ^ (1 << (bit & 7));
      return typeof decodeRecord(slot) === "string";
    }),
  );
  t.is(decodeRecord(new Uint8Array(RECORD_SIZE)), RecordProblem.Empty);
});

test("an inline record's CRC covers its payload", (t) => {
  const slot = new Uint8Array(RECORD_SIZE + 4096);
  encodeRecord({ lsn: 1, epoch: 1, flag: RecordFlag.Write, lba: 0, blockCount: 1, physicalOffset: 0, dataCrc: 0, payload: new Uint8Array(4096).fill(3) }, slot);
  t.is(typeof decodeRecord(slot), "object");
  slot[RECORD_SIZE + 100] = 4;
  t.is(decodeRecord(slot), RecordProblem.BadCrc);
});

test("a commit plan gives a k-block write k records with consecutive LSNs, one per block, and one pwrite per run", (t) => {
  const data = new Uint8Array(3 * 4096).fill(1);
  const plan = planCommit(
    [
      { kind: "write", lba: 4, data, runs: [{ start: 10, count: 2 }, { start: 0, count: 1 }] },
      { kind: "trim", lba: 0, count: 2 },
    ],
    41,
    3,
    false,
  );
  t.deepEqual(plan.records.map((r) => [r.lsn, r.lba, r.blockCount, r.physicalOffset / 4096]), [
    [42, 4, 1, 10],
    [43, 5, 1, 11],
    [44, 6, 1, 0],
    [45, 0, 2, 0],
  ]);
  t.deepEqual(plan.extentWrites.map((w) => [w.offset / 4096, w.data.length / 4096]), [[10, 2], [0, 1]]);
  t.deepEqual(plan.lastLsn, [44, 45]);
});

test("adjacent extent writes of a group are merged into one sequential write with the same bytes", (t) => {
  const w = (offset: number, fill: number) => ({ offset, data: new Uint8Array(4096).fill(fill) });
  const merged = coalesceWrites([w(8192, 3), w(0, 1), w(4096, 2), w(40960, 9)]);
  t.deepEqual(merged.map((m) => [m.offset, m.data.length]), [[0, 12288], [40960, 4096]]);
  t.deepEqual([merged[0]!.data[0], merged[0]!.data[4096], merged[0]!.data[8192]], [1, 2, 3]);
});

test("old on-disk formats stay readable: a version-1 record has watermark 0, a version-1 checkpoint takes every LBA as changed at its LSN", (t) => {
  const slot = new Uint8Array(RECORD_SIZE);
  encodeRecord({ lsn: 9, epoch: 1, flag: RecordFlag.Write, lba: 3, blockCount: 1, physicalOffset: 8192, dataCrc: 77, durableLsn: 5 }, slot);
  const dv = new DataView(slot.buffer);
  dv.setUint8(4, 1); // version 1 had no watermark: bytes 52..59 were zero
  dv.setBigUint64(52, 0n, true);
  dv.setUint32(60, crc32(slot.subarray(0, 60)) >>> 0, true);
  t.like(decodeRecord(slot), { lsn: 9, lba: 3, durableLsn: 0 });

  // SWCKPT01: 64-byte head, then per LBA u32 physical block (0xFFFFFFFF unmapped) and u32 CRC.
  const n = 4;
  const ck = new Uint8Array(64 + 8 * n);
  const cv = new DataView(ck.buffer);
  ck.set(new TextEncoder().encode("SWCKPT01"), 0);
  cv.setBigUint64(8, 3n, true); // sequence
  cv.setBigUint64(16, 20n, true); // LSN
  cv.setBigUint64(24, 20n, true); // ring start = 20 mod 64
  cv.setBigUint64(32, 1n, true);
  cv.setBigUint64(40, BigInt(n), true);
  cv.setUint32(48, 8 * n, true);
  for (let i = 0; i < n; i++) {
    cv.setUint32(64 + i * 8, i === 2 ? 0xffffffff : i + 4, true);
    cv.setUint32(64 + i * 8 + 4, 100 + i, true);
  }
  cv.setUint32(52, crc32(ck.subarray(64)) >>> 0, true);
  cv.setUint32(60, crc32(ck.subarray(0, 60)) >>> 0, true);
  const c = decodeCheckpoint(ck, n, 16, 64);
  if (typeof c === "string") return t.fail(c);
  t.deepEqual([...c.map.phys], [4, 5, -1, 7]);
  t.deepEqual([...c.map.crc], [100, 101, 0, 103]);
  t.deepEqual([...c.map.lsn], [20, 20, 20, 20]);
  const again = decodeCheckpoint(encodeCheckpoint(c), n, 16, 64);
  t.deepEqual(typeof again === "string" ? again : [...again.map.lsn], [20, 20, 20, 20], "written back as version 2 with the LSNs kept");
});
