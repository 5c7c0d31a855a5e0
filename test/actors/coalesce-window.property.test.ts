import test from "ava";
import fc from "fast-check";
import { BLOCK_SIZE } from "../../volume/index.ts";
import { CoalesceInputError, CoalesceQueue, coalesceWindow, splitWindow, type CoalesceRecord, type RawWindow } from "../../actors/writer/coalesce-window.ts";

// Random write/trim/barrier sequences over a few blocks; each write fills its blocks with a byte
// derived from its seq and block, so a wrong survivor shows in the image.
const BLOCKS = 12;
type Op = { kind: "write"; lba: number; n: number } | { kind: "trim"; lba: number; n: number } | { kind: "barrier" };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("write" as const), lba: fc.nat(BLOCKS - 1), n: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("trim" as const), lba: fc.nat(BLOCKS - 1), n: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("barrier" as const) }) },
);

function records(ops: readonly Op[], firstSeq: number): CoalesceRecord[] {
  return ops.map((op, i) => {
    const seq = firstSeq + i;
    if (op.kind === "barrier") return { kind: "barrier", seq, lsn: seq * 2 };
    const n = Math.min(op.n, BLOCKS - op.lba);
    if (op.kind === "trim") return { kind: "trim", seq, lsn: seq * 2, lba: op.lba, blockCount: n };
    const data = new Uint8Array(n * BLOCK_SIZE);
    for (let b = 0; b < n; b++) data.fill(((seq * 7 + b) % 250) + 1, b * BLOCK_SIZE, (b + 1) * BLOCK_SIZE);
    return { kind: "write", seq, lsn: seq * 2, lba: op.lba, data };
  });
}

/** Applies records on a base block map: the first byte of each block stands for its contents. */
function apply(base: readonly number[], recs: readonly CoalesceRecord[]): number[] {
  const img = [...base];
  for (const r of recs) {
    if (r.kind === "trim") for (let b = 0; b < r.blockCount; b++) img[r.lba + b] = 0;
    if (r.kind === "write") for (let b = 0; b < r.data.length / BLOCK_SIZE; b++) img[r.lba + b] = r.data[b * BLOCK_SIZE]!;
  }
  return img;
}

const baseArb = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: BLOCKS, maxLength: BLOCKS });

test("the derived image applied on the window's base equals the raw records applied", (t) => {
  fc.assert(
    fc.property(baseArb, fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 50 }), (base, ops, firstSeq) => {
      const raw = records(ops, firstSeq);
      const d = coalesceWindow({ firstSeq, lastSeq: firstSeq + raw.length - 1, records: raw });
      t.deepEqual(apply(base, d.records), apply(base, raw));
      t.is(d.sourceCutSeq, firstSeq + raw.length - 1);
      // Trims and barriers all kept, in their order; nothing out of seq order.
      const keptOrder = (rs: readonly CoalesceRecord[]) => rs.filter((r) => r.kind !== "write").map((r) => r.seq);
      t.deepEqual(keptOrder(d.records), keptOrder(raw));
      t.true(d.records.every((r, i) => i === 0 || d.records[i - 1]!.seq <= r.seq));
      t.is(d.rawBytes - d.derivedBytes, d.droppedBytes);
      t.true(d.derivedBytes <= d.rawBytes);
      // No block is written twice in the derived window unless a trim sits between (then the trim came first).
      const written = new Set<number>();
      for (const r of d.records) {
        if (r.kind !== "write") continue;
        for (let b = 0; b < r.data.length / BLOCK_SIZE; b++) {
          t.false(written.has(r.lba + b));
          written.add(r.lba + b);
        }
      }
    }),
  );
});

test("a window over budget is split at record boundaries; pieces applied in order equal the raw log and lose nothing", (t) => {
  fc.assert(
    fc.property(baseArb, fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 5 }), (base, ops, maxRecords, maxBlocks) => {
      const raw = records(ops, 1);
      const w: RawWindow<string> = { firstSeq: 1, lastSeq: raw.length, records: raw, carried: "manifest" };
      const pieces = splitWindow(w, { maxRecords, maxBytes: maxBlocks * BLOCK_SIZE });
      t.deepEqual(pieces.flatMap((p) => p.records.map((r) => r.seq)), raw.map((r) => r.seq));
      for (const p of pieces) {
        t.true(p.records.length <= maxRecords);
        const bytes = p.records.reduce((s, r) => s + (r.kind === "write" ? r.data.length : 0), 0);
        t.true(bytes <= maxBlocks * BLOCK_SIZE || p.records.length === 1);
        t.is(p.carried, "manifest");
      }
      const q = new CoalesceQueue<string>({ maxRecords, maxBytes: maxBlocks * BLOCK_SIZE }, 2);
      q.push(w);
      let img = [...base];
      let end = 0;
      while (q.backlog > 0) {
        const out = q.tick();
        t.true(out.length <= 2);
        for (const d of out) {
          t.is(d.firstSeq, end + 1);
          end = d.sourceCutSeq;
          img = apply(img, d.records);
          // Each piece's end is a cut: the image there equals the raw log through that seq.
          t.deepEqual(img, apply(base, raw.slice(0, end)));
        }
      }
      t.is(end, raw.length);
      t.is(q.totals.rawRecords, raw.length);
      t.is(q.totals.splits, pieces.length - 1);
    }),
  );
});

test("an overwrite-heavy window keeps only the newest block versions and counts what it dropped", (t) => {
  const ops: Op[] = Array.from({ length: 200 }, (_, i) => ({ kind: "write", lba: i % 4, n: 1 }));
  const d = coalesceWindow({ firstSeq: 1, lastSeq: 200, records: records(ops, 1) });
  t.deepEqual(d.records.map((r) => r.seq), [197, 198, 199, 200]);
  t.is(d.droppedRecords, 196);
  t.is(d.derivedBytes, 4 * BLOCK_SIZE);
  t.is(d.rawBytes, 200 * BLOCK_SIZE);
});

test("a window with a gap or a wrong count is refused with a typed error", (t) => {
  const raw = records([{ kind: "write", lba: 0, n: 1 }, { kind: "write", lba: 1, n: 1 }], 5);
  t.throws(() => coalesceWindow({ firstSeq: 5, lastSeq: 7, records: raw }), { instanceOf: CoalesceInputError });
  t.throws(() => coalesceWindow({ firstSeq: 5, lastSeq: 6, records: [raw[1]!, raw[0]!] }), { instanceOf: CoalesceInputError });
  const err = t.throws(() => new CoalesceQueue({ maxRecords: 0, maxBytes: 1 }, 1));
  t.is((err as CoalesceInputError).code, "invalid_coalesce_window");
});
