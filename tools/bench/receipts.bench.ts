/**
 * bench:receipts — sign + verify throughput of one canonical receipt batch of 64 receipts
 * (encode, Ed25519 sign, decode, schema checks, Ed25519 verify, fencing/evidence/range checks),
 * next to raw Ed25519 sign + verify of the very same bytes measured in the same run. The gap is
 * what the canonical encoding and the typed verification cost on top of the cryptography.
 * Rows are measured round-robin in slices (best kept) to damp load spikes from other processes.
 *
 *   npm run bench:receipts                 # table
 *   npm run bench:receipts -- --json       # table, then one JSON object on the last line
 *   npm run bench:receipts -- --ms 600     # measuring time per row (default 900 ms)
 */
import { sign, verify } from "node:crypto";
import { RangeSet } from "../../lanes/index.ts";
import { makeReceipt, type CustodyReceipt } from "../../custody/index.ts";
import {
  decodeReceiptBatch,
  encodeReceiptBatch,
  makeReceiptBatch,
  receiptStream,
  signReceiptBatch,
} from "../../custody/index.ts";
import { verifyReceiptBatch, type ReceiptVerifyContext } from "../../custody/index.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/index.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const msIndex = args.indexOf("--ms");
const measureMs = msIndex >= 0 ? Number(args[msIndex + 1]) : 900;
if (!Number.isFinite(measureMs) || measureMs <= 0) {
  console.error("--ms needs a positive number of milliseconds");
  process.exit(1);
}

const RECEIPTS_PER_BATCH = 64;
const keys = generateHolderKeyPair();
const publicKey = publicKeyFromRaw(keys.publicKey);
const stream = receiptStream("vol-bench", "lane-0");
const holder = { holderId: "us-east-1a-ram", incarnation: 3 };
const t0 = Date.now();

// A realistic mix: RAM and disk residency, a hole now and then, one coalesced obligation.
const receipts: CustodyReceipt[] = Array.from({ length: RECEIPTS_PER_BATCH }, (_, i) =>
  makeReceipt({
    holder,
    volume: stream.volume,
    lane: stream.lane,
    receiptSeq: 1000 + i,
    issuedAt: t0,
    writerTerm: 7,
    topologyEpoch: 4,
    policyGeneration: 9,
    retained:
      i % 5 === 0
        ? RangeSet.from([
            [i * 100, i * 100 + 40],
            [i * 100 + 45, i * 100 + 99],
          ])
        : RangeSet.of(i * 100, i * 100 + 99),
    prefixBase: i * 100,
    payload:
      i % 16 === 15
        ? {
            representation: "coalesced",
            sourceCutSeq: i * 100 + 99,
            manifest: {
              baseSnapshots: [{ snapshotId: "snap-42", volume: stream.volume, throughSeq: 0 }],
              consistencyCuts: [{ volume: stream.volume, lane: "lane-1", throughSeq: i * 90 }],
            },
          }
        : { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    residency:
      i % 2 === 0
        ? { kind: "ram", capabilityGeneration: 2, observedAt: t0 }
        : {
            kind: "disk",
            capabilityGeneration: 2,
            observedAt: t0,
            file: "/var/lib/custody/spill-0007",
            offset: i * 65536,
            length: 65536,
            syncedAt: t0,
          },
    obligation: { obligationId: `ob-${i % 4}`, releaseAuthority: { kind: "control_log", region: "us-east" } },
    extensions: [],
  }),
);
const batch = makeReceiptBatch(stream, holder, t0, receipts);
const signed = signReceiptBatch(batch, keys.privateKey);
const bytes = signed.body;

const ctx: ReceiptVerifyContext = {
  stream,
  holderKey: (id, inc) => (id === holder.holderId && inc === holder.incarnation ? publicKey : undefined),
  currentIncarnation: (id) => (id === holder.holderId ? holder.incarnation : undefined),
  topologyEpoch: 4,
  policyGeneration: 9,
  released: () => RangeSet.EMPTY,
};

let sink = 0; // consumed results, so the JIT cannot drop the work

/** Runs `op` in small batches until `ms` elapsed (after a short warm-up); returns ops/s. */
function measure(op: () => void, ms: number): number {
  const warmUntil = performance.now() + Math.min(60, ms / 4);
  while (performance.now() < warmUntil) op();
  let ops = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 8; i++) op();
    ops += 8;
    now = performance.now();
  }
  return (ops * 1000) / (now - start);
}

const cases: [string, () => void][] = [
  [
    "raw Ed25519 sign+verify of the batch bytes (baseline)",
    () => {
      const sig = sign(null, bytes, keys.privateKey);
      sink += verify(null, bytes, publicKey, sig) ? 1 : 0;
    },
  ],
  [
    "receipt batch sign+verify (encode, sign, decode, verify, checks)",
    () => {
      const s = signReceiptBatch(batch, keys.privateKey);
      sink += verifyReceiptBatch(s, ctx).receipts.length;
    },
  ],
  [
    "  of which: encode batch",
    () => {
      sink += encodeReceiptBatch(batch).byteLength;
    },
  ],
  [
    "  of which: decode batch",
    () => {
      sink += decodeReceiptBatch(bytes).receipts.length;
    },
  ],
  [
    "  of which: verifyReceiptBatch",
    () => {
      sink += verifyReceiptBatch(signed, ctx).receipts.length;
    },
  ],
];

const ROUNDS = 3;
const best = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, op] of cases) best.set(name, Math.max(best.get(name) ?? 0, measure(op, measureMs / ROUNDS)));
}
const rate = (prefix: string): number => best.get(cases.find(([n]) => n.startsWith(prefix))![0]) ?? 0;
const raw = rate("raw Ed25519");
const full = rate("receipt batch sign+verify");

const fmt = (n: number, digits = 0): string =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const header = ["operation (one batch of 64 receipts)", "batches/s", "receipts/s", "µs/batch", "vs raw"];
const table = cases.map(([name]) => {
  const r = best.get(name) ?? 0;
  return [name, fmt(r), fmt(r * RECEIPTS_PER_BATCH), fmt(1e6 / r, 1), `${fmt(r / raw, 3)}x`];
});
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => (r[i] as string).length)));
const line = (cells: string[]): string =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join("  ");

console.log(
  `receipt batches: ${RECEIPTS_PER_BATCH} receipts, ${bytes.byteLength} B canonical body, Ed25519 (node:crypto); ` +
    `${measureMs} ms per row, best of ${ROUNDS} slices; node ${process.version}`,
);
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const r of table) console.log(line(r));
console.log(
  `a full batch sign+verify runs at ${fmt((full / raw) * 100, 1)}% of raw Ed25519 sign+verify speed on the same ` +
    `bytes (${fmt(1e6 / full / RECEIPTS_PER_BATCH, 2)} µs per receipt)`,
);
if (sink === -1) console.log("");

if (json) {
  console.log(
    JSON.stringify({
      bench: "receipts",
      receipts_per_batch: RECEIPTS_PER_BATCH,
      batch_bytes: bytes.byteLength,
      measure_ms: measureMs,
      batch_sign_verify_per_s: Math.round(full),
      raw_sign_verify_per_s: Math.round(raw),
      receipts_sign_verify_per_s: Math.round(full * RECEIPTS_PER_BATCH),
      encode_batch_per_s: Math.round(rate("  of which: encode")),
      decode_batch_per_s: Math.round(rate("  of which: decode")),
      verify_batch_per_s: Math.round(rate("  of which: verifyReceiptBatch")),
      // Batch sign+verify throughput as a fraction of raw Ed25519 sign+verify of the same bytes (1 = no overhead).
      ratio_batch_sign_verify_vs_raw: Number((full / raw).toFixed(4)),
    }),
  );
}
