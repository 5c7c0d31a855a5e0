/**
 * bench:holder — payload throughput through 1 and 3 holder hops over a real nats-server, next to
 * raw NATS publish → subscribe of the same unit sizes (4 KiB and 64 KiB) measured in the same run,
 * and the time from a unit's publish to the first receipt covering it (p50/p99).
 *
 * Every party (writer, holders, raw publisher/subscriber) runs in this one process on its own NATS
 * connection, so the ratio compares per-unit CPU cost on the same machine and server. Holder runs
 * are end to end: the clock stops when the LAST hop's signed receipt covers every unit; a controller
 * loop releases receipted ranges so arenas recycle, as in production, and each chain carries a
 * warm-up stream first so the timed part runs in steady state (recycled segments).
 *
 *   npm run bench:holder               # table
 *   npm run bench:holder -- --json     # table, then one JSON object on the last line
 *   npm run bench:holder -- --mb 32    # payload MiB per throughput row per slice (default 6; 3-hop rows use half)
 *   npm run bench:holder -- --slices 3  # round-robin slices per row, best kept (default 3)
 */
import { unitRecordBytes } from "../arena/segment.ts";
import { systemClock } from "../core/clock.ts";
import { decodeReceiptBatch } from "../custody/receipt-batch.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../custody/signing.ts";
import { makeTransportUnit } from "../lanes/transport-unit.ts";
import { RangeSet } from "../lanes/range-set.ts";
import { startHolder, type Holder } from "../actors/holder.ts";
import type { HolderConfigInput } from "../actors/holder/holder-config.ts";
import { releaseFrontierSpec } from "../actors/holder/holder-messages.ts";
import { CreditSender } from "../transport/credit-sender.ts";
import { NatsTransport } from "../transport/nats-transport.ts";
import { receiptSubject, releaseSubject } from "../transport/subjects.ts";
import { decodeMessage, encodeMessage, unitSpec } from "../transport/wire/index.ts";
import { startNatsServer } from "../test/helpers/nats-server.ts";
import { receiptBatchSpec } from "../custody/custody-messages.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const mbIndex = args.indexOf("--mb");
const payloadMiB = mbIndex >= 0 ? Number(args[mbIndex + 1]) : 6;
const slicesIndex = args.indexOf("--slices");
const slices = slicesIndex >= 0 ? Number(args[slicesIndex + 1]) : 3;
if (!Number.isFinite(payloadMiB) || payloadMiB <= 0) {
  console.error("--mb needs a positive number");
  process.exit(1);
}

const VOLUME = "vbench";
let laneCounter = 0;

const server = await startNatsServer({ jetstream: false });
const conns: NatsTransport[] = [];
async function conn(name: string): Promise<NatsTransport> {
  const t = await NatsTransport.connect({ servers: server.url, name });
  conns.push(t);
  return t;
}

/** Raw NATS: publisher → subscriber of `count` messages of `size` bytes; returns MB/s. */
async function raw(size: number, count: number): Promise<number> {
  const pub = await conn(`raw-pub-${size}`);
  const sub = await conn(`raw-sub-${size}`);
  const data = new Uint8Array(size).fill(7);
  let got = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const s = sub.subscribe(`bench.raw.${size}`, () => {
    if (++got === count) done();
  });
  await sub.flush();
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    pub.publish(`bench.raw.${size}`, data);
    // Bound what is in flight to half a holder credit window (4 MiB), as credits do for the holder rows.
    if ((i + 1) % Math.max(1, Math.floor((4 << 20) / size)) === 0) await pub.flush();
  }
  await finished;
  const secs = (performance.now() - start) / 1000;
  s.unsubscribe();
  return (size * count) / secs / 1e6;
}

interface Chain {
  holders: Holder[];
  writer: CreditSender;
  ids: string[];
  lane: string;
  close(): Promise<void>;
}

/** Starts writer → h1 → ... → hN on a fresh lane; every hop has its own connection. */
async function chain(hops: number, unitBytes: number): Promise<Chain> {
  const lane = `l${++laneCounter}`;
  const ids = Array.from({ length: hops }, (_, i) => `bh${laneCounter}x${i}`);
  const keys = ids.map(() => generateHolderKeyPair());
  const publicKeys = keys.map((k) => publicKeyFromRaw(k.publicKey));
  const peers = {
    key: (h: string, inc: number) => {
      const i = ids.indexOf(h);
      return i >= 0 && inc === 1 ? publicKeys[i] : undefined;
    },
    incarnation: (h: string) => (ids.includes(h) ? 1 : undefined),
  };
  const holders: Holder[] = [];
  for (let i = hops - 1; i >= 0; i--) {
    const cfg: HolderConfigInput = {
      holderId: ids[i]!,
      incarnation: 1,
      site: { region: "us-east", az: `az${i}`, host: `host${i}` },
      residency: ["ram"],
      lanes: [{ volume: VOLUME, lane, upstream: [i === 0 ? "writer" : ids[i - 1]!], downstream: i === hops - 1 ? [] : [ids[i + 1]!] }],
      arena: { segmentBytes: 1 << 20, limitBytes: 96 << 20, maxOutstandingCredit: 8 << 20, maxUnitBytes: Math.max(128 * 1024, unitBytes * 2) },
      receipts: { maxUnits: 64, maxDelayMs: 2 },
    };
    const t = await conn(ids[i]!);
    holders.unshift(await startHolder(cfg, { transport: t, clock: systemClock, privateKey: keys[i]!.privateKey, peers }));
  }
  const wt = await conn(`writer-${lane}`);
  const writer = new CreditSender({ transport: wt, clock: systemClock, sender: "writer", holder: ids[0]!, volume: VOLUME, lane, retryMs: 20 }).attach();
  return {
    holders,
    writer,
    ids,
    lane,
    async close() {
      writer.close();
      for (const h of holders) await h.stop();
    },
  };
}

/** Pre-encoded units (digest computed up front: that is the writer's cost, not the holder's). */
function makeUnits(lane: string, size: number, count: number, from = 1): { data: Uint8Array; bytes: number }[] {
  const payload = new Uint8Array(size).fill(9);
  const out = [];
  for (let s = from; s < from + count; s++) {
    const u = makeTransportUnit({ volume: VOLUME, lane, term: 1, firstSeq: s, lastSeq: s, commitTs: [Date.now()], payload });
    out.push({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
  }
  return out;
}

/** Watches receipts of the last hop and releases what it covers at every hop (a controller). */
async function watchLastHop(c: Chain): Promise<{ covered(): RangeSet; onReceipt(fn: () => void): void; stop(): void }> {
  const t = await conn(`ctl-${c.lane}`);
  const last = c.ids[c.ids.length - 1]!;
  let covered = RangeSet.EMPTY;
  let listener: (() => void) | undefined;
  const sub = t.subscribe(receiptSubject(VOLUME, c.lane), (m) => {
    const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m.data).body);
    if (b.holder.holderId !== last) return;
    for (const r of b.receipts) covered = covered.union(r.retained);
    listener?.();
  });
  await t.flush();
  let seq = 0;
  const releaser = setInterval(() => {
    if (covered.isEmpty) return;
    for (const h of c.ids) {
      t.publish(releaseSubject(h), encodeMessage(releaseFrontierSpec, { holder: h, volume: VOLUME, lane: c.lane, ranges: covered.toJSON(), epoch: 0, controlSeq: ++seq }));
    }
  }, 10);
  return {
    covered: () => covered,
    onReceipt: (fn) => (listener = fn),
    stop: () => {
      clearInterval(releaser);
      sub.unsubscribe();
    },
  };
}

/**
 * Throughput of `count` units of `size` through `hops` holders, end to end; MB/s of payload. The
 * chain first carries a warm-up stream of the same size, so timing starts in steady state: arena
 * segments are being recycled (a fresh segment's first touch costs page faults that a long-running
 * holder pays once), connections and JIT are warm.
 */
async function throughHolders(hops: number, size: number, count: number): Promise<number> {
  const c = await chain(hops, size);
  const warm = Math.min(count, Math.ceil((24 << 20) / size));
  const units = makeUnits(c.lane, size, warm + count);
  const w = await watchLastHop(c);
  const run = async (from: number, to: number): Promise<number> => {
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    w.onReceipt(() => {
      if (w.covered().covers(from, to)) done();
    });
    const start = performance.now();
    for (let i = from; i <= to; i++) c.writer.send(units[i - 1]!);
    await finished;
    return (performance.now() - start) / 1000;
  };
  await run(1, warm);
  const secs = await run(warm + 1, warm + count);
  w.stop();
  await c.close();
  return (size * count) / secs / 1e6;
}

/** Publish → first receipt latency for `samples` units sent one at a time; ms values. */
async function receiptLatency(size: number, samples: number): Promise<number[]> {
  const c = await chain(1, size);
  const units = makeUnits(c.lane, size, samples);
  const w = await watchLastHop(c);
  await new Promise((r) => setTimeout(r, 50)); // initial credit
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const seq = i + 1;
    const got = new Promise<void>((resolve) => w.onReceipt(() => w.covered().has(seq) && resolve()));
    const t0 = performance.now();
    c.writer.send(units[i]!);
    await got;
    out.push(performance.now() - t0);
  }
  w.stop();
  await c.close();
  return out.sort((a, b) => a - b);
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

try {
  const bytes = payloadMiB * 1024 * 1024;
  const n4k = Math.round(bytes / 4096);
  const n64k = Math.round(bytes / 65536);
  // Warm-up (JIT, connections) on a small run of each path.
  await raw(4096, 1000);
  await throughHolders(1, 4096, 1000);

  // Rows are measured round-robin in slices and the best slice is kept: other processes share
  // this machine, and a burst of their load should not decide a ratio.
  const best = { raw4k: 0, raw64k: 0, hop1_4k: 0, hop1_64k: 0, hop3_4k: 0, hop3_64k: 0 };
  for (let slice = 0; slice < slices; slice++) {
    best.raw4k = Math.max(best.raw4k, await raw(4096, n4k));
    best.hop1_4k = Math.max(best.hop1_4k, await throughHolders(1, 4096, n4k));
    best.hop3_4k = Math.max(best.hop3_4k, await throughHolders(3, 4096, Math.ceil(n4k / 2)));
    best.raw64k = Math.max(best.raw64k, await raw(65536, n64k));
    best.hop1_64k = Math.max(best.hop1_64k, await throughHolders(1, 65536, n64k));
    best.hop3_64k = Math.max(best.hop3_64k, await throughHolders(3, 65536, Math.ceil(n64k / 2)));
  }
  const { raw4k, raw64k, hop1_4k, hop1_64k, hop3_4k, hop3_64k } = best;
  const lat = await receiptLatency(4096, 300);

  const rows: [string, number, number][] = [
    ["raw NATS pub→sub 4 KiB", raw4k, 1],
    ["1 holder hop 4 KiB", hop1_4k, hop1_4k / raw4k],
    ["3 holder hops 4 KiB", hop3_4k, hop3_4k / raw4k],
    ["raw NATS pub→sub 64 KiB", raw64k, 1],
    ["1 holder hop 64 KiB", hop1_64k, hop1_64k / raw64k],
    ["3 holder hops 64 KiB", hop3_64k, hop3_64k / raw64k],
  ];
  console.log(`bench:holder — ${payloadMiB} MiB of payload per slice, best of ${slices} slices, one process, one nats-server (${server.url})`);
  console.log("path".padEnd(28) + "MB/s".padStart(10) + "vs raw".padStart(10));
  for (const [name, mbs, ratio] of rows) console.log(name.padEnd(28) + mbs.toFixed(1).padStart(10) + `${ratio.toFixed(2)}×`.padStart(10));
  console.log(`publish → first receipt (1 hop, 4 KiB, ${lat.length} samples): p50 ${pct(lat, 50).toFixed(2)} ms, p99 ${pct(lat, 99).toFixed(2)} ms`);
  console.log("target: 1 hop ≥ 0.5× raw");
  if (json) {
    console.log(
      JSON.stringify({
        raw_4k_mb_per_s: raw4k,
        raw_64k_mb_per_s: raw64k,
        hop1_4k_mb_per_s: hop1_4k,
        hop1_64k_mb_per_s: hop1_64k,
        hop3_4k_mb_per_s: hop3_4k,
        hop3_64k_mb_per_s: hop3_64k,
        ratio_1hop_4k_vs_raw: hop1_4k / raw4k,
        ratio_1hop_64k_vs_raw: hop1_64k / raw64k,
        ratio_3hop_4k_vs_raw: hop3_4k / raw4k,
        ratio_3hop_64k_vs_raw: hop3_64k / raw64k,
        receipt_p50_ms: pct(lat, 50),
        receipt_p99_ms: pct(lat, 99),
      }),
    );
  }
} finally {
  for (const c of conns) await c.close().catch(() => undefined);
  await server.stop();
}
