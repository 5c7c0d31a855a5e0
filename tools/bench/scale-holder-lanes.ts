/**
 * The holder half of bench:scale: one holder serving many lanes. Idle cost per lane is the growth
 * of heap and array buffers (after GC) from a holder with one lane to one with N; throughput with
 * every lane active is compared with one lane carrying the same bytes, both timed until the
 * holder's signed receipts cover every unit sent.
 */
import { CreditSender, startHolder, type Holder, type HolderConfigInput } from "../../actors/index.ts";
import { systemClock } from "../../core/index.ts";
import { decodeReceiptBatch, generateHolderKeyPair, receiptBatchSpec } from "../../custody/index.ts";
import { makeTransportUnit, RangeSet } from "../../lanes/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/index.ts";
import { unitSpec } from "../../transport/protocol/index.ts";
import { receiptSubject } from "../../transport/protocol/index.ts";
import { startNatsServer } from "../../test/kit/index.ts";
import { unitRecordBytes } from "../../arena/index.ts";

const UNIT_BYTES = 4096;
/** Bytes each active lane carries; one lane carries lanes × this in the comparison row. */
const BYTES_PER_LANE = 256 * 1024;

/** One row of the table. */
export interface HolderLanesRow {
  readonly lanes: number;
  readonly idleHeapBytesPerLane: number;
  readonly idleBufferBytesPerLane: number;
  readonly activeMBps: number;
  readonly oneLaneMBps: number;
}

const gc = (globalThis as { gc?: () => void }).gc;
function memory(): { heap: number; buffers: number } {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers };
}

/** A holder named `id` on `lanes`, on its own connection to the bench server. */
async function startBenchHolder(
  url: string,
  id: string,
  lanes: readonly { volume: string; lane: string }[],
): Promise<{ holder: Holder; id: string; conn: NatsTransport }> {
  const conn = await NatsTransport.connect({ servers: url, name: id });
  const cfg: HolderConfigInput = {
    holderId: id,
    incarnation: 1,
    site: { region: "bench", az: "a", host: "x" },
    residency: ["ram"],
    lanes: lanes.map((l) => ({ ...l, upstream: ["writer"], downstream: [] })),
    arena: { segmentBytes: 64 * 1024, limitBytes: 1 << 30, maxOutstandingCredit: 1 << 20, maxUnitBytes: 32 * 1024 },
    receipts: { maxUnits: 64, maxDelayMs: 5 },
  };
  const holder = await startHolder(cfg, {
    transport: conn,
    clock: systemClock,
    privateKey: generateHolderKeyPair().privateKey,
    peers: { key: () => undefined, incarnation: () => undefined },
  });
  return { holder, id, conn };
}

/** Sends `unitsPerLane` units on every lane and resolves with MB/s once receipts cover them all. */
async function driveLanes(
  conns: { readonly writer: NatsTransport; readonly receipts: NatsTransport },
  holderId: string,
  lanes: readonly { volume: string; lane: string }[],
  unitsPerLane: number,
): Promise<number> {
  const pending = new Map(lanes.map((l) => [l.volume, RangeSet.EMPTY]));
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const subs = lanes.map((l) =>
    conns.receipts.subscribe(receiptSubject(l.volume, l.lane), (m) => {
      const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m.data).body);
      let covered = pending.get(l.volume)!;
      for (const r of b.receipts) covered = covered.union(r.retained);
      pending.set(l.volume, covered);
      if (covered.covers(1, unitsPerLane) && [...pending.values()].every((c) => c.covers(1, unitsPerLane))) done();
    }),
  );
  await conns.receipts.flush();
  const payload = new Uint8Array(UNIT_BYTES).fill(7);
  const senders = lanes.map((l) =>
    new CreditSender({
      transport: conns.writer,
      clock: systemClock,
      sender: "writer",
      holder: holderId,
      volume: l.volume,
      lane: l.lane,
      retryMs: 20,
    }).attach(),
  );
  const units = lanes.map((l) =>
    Array.from({ length: unitsPerLane }, (_, k) => {
      const u = makeTransportUnit({
        volume: l.volume,
        lane: l.lane,
        term: 1,
        firstSeq: k + 1,
        lastSeq: k + 1,
        commitTs: [Date.now()],
        payload,
      });
      return { data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) };
    }),
  );
  const t0 = performance.now();
  for (let k = 0; k < unitsPerLane; k++) for (let i = 0; i < lanes.length; i++) senders[i]!.send(units[i]![k]!);
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  for (const s of senders) s.close();
  for (const s of subs) s.unsubscribe();
  return (lanes.length * unitsPerLane * UNIT_BYTES) / 1e6 / seconds;
}

/** Measures idle memory per lane and all-lanes-active throughput for each lane count. */
export async function measureHolderLanes(laneCounts: readonly number[]): Promise<{ rows: HolderLanesRow[] }> {
  const server = await startNatsServer({ jetstream: false });
  const writerConn = await NatsTransport.connect({ servers: server.url, name: "scale-writer" });
  const receiptConn = await NatsTransport.connect({ servers: server.url, name: "scale-receipts" });
  let run = 0;
  const start = (lanes: readonly { volume: string; lane: string }[]) =>
    startBenchHolder(server.url, `scale-h${++run}`, lanes);
  const conns = { writer: writerConn, receipts: receiptConn };
  const lanesOf = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => ({ volume: `sv${tag}${i}`, lane: "l0" }));

  const rows: HolderLanesRow[] = [];
  const base = memory();
  const one = await start(lanesOf(1, "idle1-"));
  const withOne = memory();
  await one.holder.stop();
  await one.conn.close();
  for (const n of laneCounts) {
    const before = memory();
    const lanes = lanesOf(n, `r${n}-`);
    const h = await start(lanes);
    await new Promise((r) => setTimeout(r, 300)); // let credit subscriptions and timers settle
    const idle = memory();
    // Growth from this holder, less what a one-lane holder costs, spread over the other lanes.
    const perLane = (grown: number, oneLane: number) => (n > 1 ? Math.max(0, (grown - oneLane) / (n - 1)) : 0);
    const idleHeapBytesPerLane = perLane(idle.heap - before.heap, withOne.heap - base.heap);
    const idleBufferBytesPerLane = perLane(idle.buffers - before.buffers, withOne.buffers - base.buffers);
    const unitsPerLane = Math.max(1, Math.floor(BYTES_PER_LANE / UNIT_BYTES));
    const activeMBps = await driveLanes(conns, h.id, lanes, unitsPerLane);
    await h.holder.stop();
    await h.conn.close();
    const single = await start(lanesOf(1, `s${n}-`));
    const oneLaneMBps = await driveLanes(conns, single.id, lanesOf(1, `s${n}-`), unitsPerLane * n);
    await single.holder.stop();
    await single.conn.close();
    rows.push({ lanes: n, idleHeapBytesPerLane, idleBufferBytesPerLane, activeMBps, oneLaneMBps });
  }
  await writerConn.close();
  await receiptConn.close();
  await server.stop();
  return { rows };
}
