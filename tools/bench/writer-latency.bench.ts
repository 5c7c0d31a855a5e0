/**
 * bench:writer-latency — the volume writer alone, without NATS or holders: a real SmartWAL volume
 * in a temp dir and an in-process transport that grants one first hop all the credit it wants and
 * records every unit published to it. It measures what the writer itself adds:
 * - paced (custody on): per write, the time from `write()` to the unit carrying it being published
 *   toward the first hop (and to the write's local admission), at `--rate` writes/s;
 * - one at a time (custody on): per write, the timers (setTimeout/setImmediate), microtasks and
 *   promises created between `write()` and that publish — the writer's macrotask and promise hops;
 * - closed loop at queue depth 16, custody off and on: the process CPU µs per write.
 * Run it pinned (`taskset -c 1 npm run bench:writer-latency -- --json`); compare commits
 * by running the same file in a worktree of each (it only uses the writer's public start function).
 *
 *   --rate 1000     paced writes/s (default 1000)
 *   --paced 2000    writes in the paced pass (default 2000)
 *   --writes 6000   writes per closed-loop pass (default 6000)
 *   --holders 3     first hops, each granting ample credit (default 3)
 *   --pass paced    run only this pass (off, on, paced, hops; repeatable; default all)
 *   --json          one JSON object on stdout
 */
import { createHook } from "node:async_hooks";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startVolumeWriter } from "../../actors/index.ts";
import { systemClock } from "../../core/index.ts";
import { creditSpec, creditSubject, encodeMessage, unitSubject } from "../../transport/protocol/index.ts";
import { readUnitMessage, type InboundMessage, type Transport } from "../../transport/index.ts";
import { SmartWalVolume } from "../../volume/index.ts";

const args = process.argv.slice(2);
const num = (flag: string, dflt: number) => {
  const i = args.indexOf(flag);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const RATE = num("--rate", 1000);
const PACED = num("--paced", 2000);
const WRITES = num("--writes", 6000);
const QD = 16;
const BLOCKS = 4096;
const VOLUME = "vlat";
/** First hops (`--holders`, default 3 as in bench:e2e); units are timed as published toward the first. */
const HOLDERS = Array.from({ length: num("--holders", 3) }, (_, i) => `h${i + 1}`);

const work = mkdtempSync(join(tmpdir(), "custody-bench-writer-latency-"));
let volumes = 0;
async function newVolume(): Promise<SmartWalVolume> {
  const dir = join(work, `v${volumes++}`);
  await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 65_536 });
  return SmartWalVolume.open(dir, { maxBatch: 64 });
}

/** An in-process transport: the first hop grants ample credit at once and units are noted by lane sequence. */
function fakeTransport(onUnit: (lastSeq: number) => void): Transport {
  const handlers = new Map<string, (m: InboundMessage) => void>();
  return {
    name: "in-process",
    publish(subject, data, opts) {
      if (!subject.startsWith(unitSubject(HOLDERS[0]!, VOLUME, "l0"))) return;
      const read = readUnitMessage({ data, headers: opts?.headers ?? {} }, undefined);
      if (read.kind === "units") for (const u of read.units) if (u.unit !== undefined) onUnit(u.unit.lastSeq);
    },
    subscribe(subject, handler) {
      handlers.set(subject, handler);
      const holder = HOLDERS.find((h) => subject === creditSubject(h, VOLUME, "l0"));
      if (holder !== undefined) {
        const grant = { holder, sender: "w1", volume: VOLUME, lane: "l0", incarnation: 1, session: 1 };
        const data = encodeMessage(creditSpec, { ...grant, window: 1, grantedThrough: 2 ** 50, grantSeq: 1 });
        queueMicrotask(() => handler({ subject, data, headers: {} }));
      }
      return { subject, unsubscribe: () => handlers.delete(subject), drain: async () => undefined };
    },
    request: () => Promise.reject(new Error("no requests here")),
    respond() {},
    flush: async () => undefined,
    close: async () => undefined,
  };
}

/** A writer of one lane toward one first hop, and a way to wait for the unit carrying a sequence. */
async function openWriter(custody: boolean) {
  const published: number[] = []; // publish time per lane sequence
  let through = 0;
  const waiting = new Map<number, () => void>();
  const transport = fakeTransport((lastSeq) => {
    const now = performance.now();
    for (let s = through + 1; s <= lastSeq; s++) {
      published[s] = now;
      waiting.get(s)?.();
      waiting.delete(s);
    }
    through = Math.max(through, lastSeq);
  });
  const volume = await newVolume();
  const writer = startVolumeWriter(
    {
      writerId: "w1",
      volume: VOLUME,
      term: 1,
      lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: custody ? HOLDERS : [] }],
      contracts: [],
      holderSites: custody
        ? Object.fromEntries(HOLDERS.map((h) => [h, { id: `s-${h}`, region: "r1", az: "a1", host: h, deps: [] }]))
        : {},
      topologyEpoch: 1,
      policyGeneration: 1,
      maxUnitPayloadBytes: 64 * 1024,
      retainUntil: "receipted",
      // Nothing receipts here: no resend toward the fake first hop while the passes run.
      resendAfterMs: 600_000,
      custody,
    },
    {
      transport,
      clock: systemClock,
      volume,
      dataKey: new Uint8Array(32),
      peers: { key: () => undefined, incarnation: () => undefined },
    },
  );
  await new Promise((r) => setTimeout(r, 20)); // the grant arrives
  const publishedOf = (seq: number) =>
    through >= seq ? Promise.resolve() : new Promise<void>((r) => waiting.set(seq, r));
  return { writer, volume, published, publishedOf };
}

const data = new Uint8Array(4096).fill(0x5a);
const lbaOf = (i: number) => (i * 7919) % BLOCKS;
const pct = (xs: readonly number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Paced writes, custody on: write() → admitted, and write() → its unit published. */
async function paced() {
  const w = await openWriter(true);
  const local: number[] = [];
  const toPublish: number[] = [];
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < PACED; i++) {
    const due = start + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0.5) await sleep(wait);
    const t0 = performance.now();
    pending.push(
      w.writer.write(lbaOf(i), data).then(async (ack) => {
        local.push(performance.now() - t0);
        const seq = ack.pieces[0]!.seq;
        await w.publishedOf(seq);
        toPublish.push(w.published[seq]! - t0);
      }),
    );
  }
  await Promise.all(pending);
  const cpu = process.cpuUsage(cpu0);
  w.writer.stop();
  await w.volume.close();
  return {
    cpu_us_per_paced_write: (cpu.user + cpu.system) / PACED,
    p50_local_ms: pct(local, 50),
    p99_local_ms: pct(local, 99),
    p50_publish_ms: pct(toPublish, 50),
    p99_publish_ms: pct(toPublish, 99),
  };
}

/** One write at a time, custody on: timers, microtasks and promises between write() and its publish. */
async function hops(count: number) {
  const w = await openWriter(true);
  for (let i = 0; i < 50; i++) await w.publishedOf((await w.writer.write(lbaOf(i), data)).pieces[0]!.seq);
  const n = { setTimeout: 0, setImmediate: 0, queueMicrotask: 0, promises: 0 };
  const g = globalThis as unknown as Record<string, (...a: unknown[]) => unknown>;
  const orig = { setTimeout: g.setTimeout!, setImmediate: g.setImmediate!, queueMicrotask: g.queueMicrotask! };
  for (const k of ["setTimeout", "setImmediate", "queueMicrotask"] as const)
    g[k] = (...a: unknown[]) => {
      n[k]++;
      return orig[k](...a);
    };
  const hook = createHook({ init: (_id, type) => void (type === "PROMISE" && n.promises++) }).enable();
  try {
    for (let i = 0; i < count; i++) await w.publishedOf((await w.writer.write(lbaOf(i), data)).pieces[0]!.seq);
  } finally {
    hook.disable();
    Object.assign(g, orig);
  }
  w.writer.stop();
  await w.volume.close();
  const per = (x: number) => Math.round((x / count) * 100) / 100;
  return {
    setTimeout_per_write: per(n.setTimeout),
    setImmediate_per_write: per(n.setImmediate),
    microtasks_per_write: per(n.queueMicrotask),
    promises_per_write: per(n.promises),
  };
}

/** Closed loop at QD, custody on or off: process CPU µs per write. */
async function closedLoop(custody: boolean) {
  const w = await openWriter(custody);
  let next = 0;
  const run = async (count: number) => {
    const stop = next + count;
    const worker = async () => {
      while (next < stop) await w.writer.write(lbaOf(next++), data);
    };
    await Promise.all(Array.from({ length: QD }, worker));
  };
  await run(1000); // warm-up
  const batches0 = w.volume.stats().batches;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(WRITES);
  const cpu = process.cpuUsage(cpu0);
  const batches = w.volume.stats().batches - batches0;
  const seconds = (performance.now() - t0) / 1000;
  if (custody) await w.publishedOf(next);
  w.writer.stop();
  await w.volume.close();
  return { cpu_us_per_write: (cpu.user + cpu.system) / WRITES, iops: WRITES / seconds, per_batch: WRITES / batches };
}

const passes = args.flatMap((a, i) => (args[i - 1] === "--pass" ? [a] : []));
const wants = (p: string) => passes.length === 0 || passes.includes(p);
const off = wants("off") ? await closedLoop(false) : { cpu_us_per_write: NaN, iops: NaN, per_batch: NaN };
const on = wants("on") ? await closedLoop(true) : { cpu_us_per_write: NaN, iops: NaN, per_batch: NaN };
const p = wants("paced") ? await paced() : {};
const h = wants("hops") ? await hops(500) : {};
rmSync(work, { recursive: true, force: true });
const out = {
  writer_cpu_us_per_write_off: off.cpu_us_per_write,
  iops_off: off.iops,
  writes_per_volume_batch_off: off.per_batch,
  writer_cpu_us_per_write_on: on.cpu_us_per_write,
  iops_on: on.iops,
  writes_per_volume_batch_on: on.per_batch,
  paced_rate: RATE,
  ...p,
  ...h,
};
if (args.includes("--json")) console.log(JSON.stringify(out));
else for (const [k, v] of Object.entries(out)) console.log(`${k}: ${typeof v === "number" ? v.toFixed(2) : v}`);
