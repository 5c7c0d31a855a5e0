/**
 * bench:e2e — the volume writer end to end: write IOPS and latency with custody ON (3 holders in
 * 2 regions of a real NATS supercluster: same-AZ and other-AZ RAM holders in us-east, one in
 * us-west; each holder its own `custody run holder` process, as in production) next to the SAME writer actor with
 * custody OFF (SmartWAL only: no units, no receipts), in one
 * run, at queue depth 16 with 4 KiB writes.
 *
 * - local latency: write call → SmartWAL admission (what the application's write waits for);
 * - protected latency: write call → the first verified receipt proving the contract
 *   "survive loss of us-east" (a us-west holder retains it) — what a protected sync waits for.
 *
 *   npm run bench:e2e                 # table
 *   npm run bench:e2e -- --json       # table, then one JSON object on the last line
 *   npm run bench:e2e -- --writes 4000 # writes per mode (default 3000)
 *   npm run bench:e2e -- --no-pin      # leave scheduling to the OS
 *   npm run bench:e2e -- --rate 2000   # paced pass at this many writes/s (default: half the protected throughput)
 *   npm run bench:e2e -- --settle 4    # seconds of pacing between the first and the settled paced pass (default 3)
 *   npm run bench:e2e -- --paced-s 10  # seconds of each measured paced pass (default 2; see below)
 *
 * Pinned (the default when `taskset` exists and the machine has two CPUs or more): this process —
 * the writer — runs alone on CPU 0, every holder process and nats-server on CPU 1, so custody's
 * cost to the writer is measured as the writer's own CPU time, not as competition for cores. The
 * two modes run in interleaved slices (off, on, off, on, …) against two volumes, so drift of a
 * shared machine hits both alike. The writer's CPU µs per write comes from process.cpuUsage()
 * around each slice; one more, profiled custody-on slice (not counted) splits the writer's CPU by
 * where it goes.
 *
 * The closed-loop protected latency grows with the length of a slice (the writer outruns the
 * holders; see protected-throughput.ts), so two more custody-on passes follow: protected
 * throughput (writes until a protected sync covers them) and protected latency at a paced rate
 * below it. The paced latency is measured twice: right after the throughput passes, when the
 * holder processes are a few seconds old (V8 is still optimizing their per-unit paths and their
 * first full collections fall inside the pass), and again after `--settle` more seconds at the
 * same rate, as a holder that has been running a while serves it (`_settled` keys). Both passes
 * also report the same writes' latency from their local admission (`p50/p99_custody_ms_paced[_settled]`):
 * custody's own part, without the stalls of local admission (a long volume batch) that delay shipping.
 *
 * A 2 s pass has 2,000 samples at 1,000 writes/s, so its p99 is set by the 1–5 bursts of slow
 * writes that pass happened to catch (the same commit gives 28–84 ms from run to run). `--paced-s`
 * lengthens both measured passes for a steadier tail. No controller runs here to confirm and
 * release custody, and a writer that keeps units until confirmation stops admitting at its 64 MiB
 * backlog bound (about 15,000 writes), so a run that writes more than that keeps units in the
 * writer only until every first hop receipted them (`retainUntil: "receipted"`, the setting for
 * deployments without a controller), and the holders' arenas are sized to keep the whole run.
 */
import { execFileSync } from "node:child_process";
import { cpus } from "node:os";
import { Session } from "node:inspector/promises";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startVolumeWriter } from "../../actors/index.ts";
import { systemClock } from "../../core/index.ts";
import { KeyAuthority } from "../../custody/index.ts";
import { publicKeyFromRaw } from "../../custody/index.ts";
import type { Site } from "../../policies/index.ts";
import { initJetStreamControlLog, NatsTransport } from "../../transport/index.ts";
import { SmartWalVolume } from "../../volume/index.ts";
import { bootstrapControlLog, DeployedProcess, startSupercluster, writeHolderRole } from "../../test/kit/index.ts";
import type { KeyObject } from "node:crypto";
import { pacedWrites, scatteredLba, type PacedWrite } from "./protected-throughput.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const wi = args.indexOf("--writes");
const WRITES = wi >= 0 ? Number(args[wi + 1]) : 3000;
if (!Number.isSafeInteger(WRITES) || WRITES < 100) {
  console.error("--writes needs an integer >= 100");
  process.exit(1);
}
const QD = 16;
const ri = args.indexOf("--rate");
const RATE = ri >= 0 ? Number(args[ri + 1]) : undefined;
if (RATE !== undefined && !(RATE > 0)) {
  console.error("--rate needs a positive number of writes per second");
  process.exit(1);
}
const si = args.indexOf("--settle");
const SETTLE_S = si >= 0 ? Number(args[si + 1]) : 3;
if (!(SETTLE_S >= 0)) {
  console.error("--settle needs a number of seconds >= 0");
  process.exit(1);
}
const pi = args.indexOf("--paced-s");
const PACED_S = pi >= 0 ? Number(args[pi + 1]) : 2;
if (!(PACED_S >= 1)) {
  console.error("--paced-s needs a number of seconds >= 1");
  process.exit(1);
}
const SLICES = 3;
const perSlice = Math.ceil(WRITES / SLICES);
/** Writes in each measured paced pass at `rate` writes/s (never fewer than a slice). */
const pacedCountAt = (rate: number) => Math.max(perSlice, Math.round(PACED_S * rate));
/**
 * Longer passes than the default 2 s write more than a writer that keeps units until confirmation
 * can hold (see the header): the writer then keeps them only until receipted, and each holder's
 * arena is sized for every custody-on write of the run at the highest rate the run can pace (8 KiB
 * per write: a holder's arena took about 5.6 KB per paced 4 KiB write, and a full arena withholds
 * credit, which stalls the run; 5,000 writes/s is above any protected throughput measured here).
 */
const longPasses = PACED_S > 2;
const custodyOnWrites = (rate: number) => WRITES + 2 * perSlice + 2 * pacedCountAt(rate) + Math.round(SETTLE_S * rate);
const arenaLimitBytes = longPasses
  ? Math.max(64 << 20, custodyOnWrites(RATE ?? 5_000) * 8192)
  : Math.max(64 << 20, WRITES * 4400 * 4);

/** Pins `pid` (all its threads) to `cpu` with taskset; false when taskset is missing or refuses. */
function pin(pid: number, cpu: number): boolean {
  try {
    execFileSync("taskset", ["-a", "-cp", String(cpu), String(pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const wantPin = !args.includes("--no-pin") && cpus().length >= 2;
const pinned = wantPin && pin(process.pid, 0);
if (wantPin && !pinned)
  console.error("bench:e2e: taskset is missing or refused; running unpinned (install util-linux for pinned figures)");

const BLOCKS = 4096;
const VOLUME = "vbench";

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

/** The part of a V8 CPU profile the breakdown reads. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Where custody's CPU goes in the writer, by the code each sample was in (first match wins). */
const CATEGORIES: readonly { readonly name: string; readonly match: (url: string, fn: string) => boolean }[] = [
  { name: "idle", match: (u, f) => f === "(idle)" || f === "(program)" },
  { name: "garbage collection", match: (u, f) => f === "(garbage collector)" },
  { name: "seal/encrypt", match: (u) => u.includes("crypto/cipher") || u.includes("unit-payload") },
  {
    name: "digests (SHA-256)",
    match: (u, f) => u.includes("crypto/hash") || (u === "" && (f === "update" || f === "digest")),
  },
  {
    name: "receipt verification",
    match: (u, f) =>
      u.includes("crypto/sig") ||
      u.includes("crypto/keys") ||
      u.includes("custody/receipt") ||
      f === "SignJob" ||
      f === "VerifyJob",
  },
  { name: "encode/decode", match: (u) => u.includes("@msgpack") || u.includes("/protocol/") },
  {
    name: "publish (NATS client)",
    match: (u) =>
      u.includes("@nats-io") || u.includes("/transport/") || u.includes("node:net") || u.includes("stream_base"),
  },
  {
    name: "protection bookkeeping",
    match: (u) => /actors\/writer\/(protection|confirmed-cut|receipt-terms)/.test(u) || u.includes("/lanes/"),
  },
  {
    name: "SmartWAL volume",
    match: (u, f) =>
      u.includes("/volume/") ||
      u.includes("node:fs") ||
      u.includes("internal/fs") ||
      (u === "" && ["writeBuffer", "writeBuffers", "fdatasync", "fsync", "read", "crc32"].includes(f)),
  },
  { name: "writer actor (machine, outbox, shipping)", match: (u) => u.includes("/actors/") || u.includes("xstate") },
];

/** Busy CPU share per category (idle left out), largest first. */
function writerCpuBreakdown(p: CpuProfile): { category: string; share: number }[] {
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const totals = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const f = byId.get(id)!;
    const c = CATEGORIES.find((k) => k.match(f.url, f.functionName))?.name ?? "other";
    // Count samples, not time deltas: a delta also spans time the process was not running.
    totals.set(c, (totals.get(c) ?? 0) + 1);
  });
  totals.delete("idle");
  const busy = [...totals.values()].reduce((a, b) => a + b, 0) || 1;
  return [...totals].map(([category, t]) => ({ category, share: t / busy })).sort((a, b) => b.share - a.share);
}

const work = mkdtempSync(join(tmpdir(), "custody-bench-e2e-"));
async function newVolume(name: string): Promise<SmartWalVolume> {
  const dir = join(work, name);
  await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 65_536 });
  return SmartWalVolume.open(dir, { maxBatch: 64 });
}

/** Runs WRITES 4 KiB writes at QD; `write` resolves on admission and returns a key for protection. */
async function drive(
  count: number,
  offset: number,
  write: (lba: number, data: Uint8Array) => Promise<number>,
): Promise<{ seconds: number; cpuUs: number; local: number[]; keys: { key: number; t0: number }[] }> {
  const data = new Uint8Array(4096).fill(0x5a);
  const local: number[] = [];
  const keys: { key: number; t0: number }[] = [];
  let next = 0;
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  const worker = async () => {
    while (next < count) {
      const i = offset + next++;
      const t0 = performance.now();
      const key = await write(scatteredLba(i, BLOCKS), data);
      local.push(performance.now() - t0);
      keys.push({ key, t0 });
    }
  };
  await Promise.all(Array.from({ length: QD }, worker));
  const cpu = process.cpuUsage(cpu0);
  return { seconds: (performance.now() - start) / 1000, cpuUs: cpu.user + cpu.system, local, keys };
}

// ---- custody OFF: the same writer actor with custody disabled (SmartWAL only, nothing shipped) ----
const offVol = await newVolume("off");
const offT = new (class {
  // A transport that goes nowhere: custody off publishes nothing but progress, which is dropped.
  readonly name = "off";
  publish(): void {}
  subscribe() {
    return { subject: "", unsubscribe() {}, drain: async () => {} };
  }
  request(): Promise<never> {
    return Promise.reject(new Error("custody off"));
  }
  respond(): void {}
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
})();
const offWriter = startVolumeWriter(
  {
    writerId: "w1",
    volume: VOLUME,
    term: 1,
    lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: [] }],
    contracts: [],
    holderSites: {},
    topologyEpoch: 1,
    policyGeneration: 1,
    custody: false,
  },
  {
    transport: offT,
    clock: systemClock,
    volume: offVol,
    dataKey: new Uint8Array(32),
    peers: { key: () => undefined, incarnation: () => undefined },
  },
);

// ---- custody ON: writer + 3 holders in 2 regions ----
// JetStream carries the control log the holder processes follow (as every `custody run` role does).
const sc = await startSupercluster({ regions: ["us-east", "us-west"] });
const sites: Record<string, Site> = {
  "h-e1": { id: "s-e1", region: "us-east", az: "use1-az1", host: "e1", deps: [] },
  "h-e2": { id: "s-e2", region: "us-east", az: "use1-az2", host: "e2", deps: [] },
  "h-w": { id: "s-w", region: "us-west", az: "usw2-a", host: "w", deps: [] },
};
const conns: NatsTransport[] = [];
const ct = await NatsTransport.connect({ servers: sc.regions["us-east"]!.url, name: "bench-operator" });
conns.push(ct);
const CONTROL = "bench";
const { log: store } = await initJetStreamControlLog(ct.connection, { region: CONTROL });
// Holders run as their own processes (`custody run holder`, as in production), so their CPU is not
// the writer's event loop. They start on an empty control log (incarnation 1), then the operator's
// bootstrap admits them.
const keys = new Map<string, KeyObject>();
const children: DeployedProcess[] = [];
const admitted: { id: string; site: Site; publicKey: Uint8Array }[] = [];
for (const [id, s] of Object.entries(sites)) {
  const { file, publicKey } = writeHolderRole(
    work,
    {
      id,
      site: s,
      nats: { servers: sc.regions[s.region]!.url },
      volume: VOLUME,
      lane: "l0",
      upstream: ["w1"],
      downstream: [],
      disk: false,
      // The holder's own resend default (1 s), not the deployment files' 500 ms.
      overrides: {
        arena: {
          segmentBytes: 256 << 10,
          limitBytes: arenaLimitBytes,
          maxOutstandingCredit: 2 << 20,
          maxUnitBytes: 128 << 10,
        },
        receipts: { maxUnits: 16, maxDelayMs: 2 },
        resendAfterMs: 1_000,
      },
    },
    CONTROL,
  );
  keys.set(id, publicKeyFromRaw(publicKey));
  admitted.push({ id, site: s, publicKey });
  const child = DeployedProcess.role(id, "holder", file);
  children.push(child);
  await child.ready(60_000);
  if (pinned) pin(child.pid, 1);
}
await bootstrapControlLog(store, admitted, { volume: VOLUME, lane: "l0" });
const peers = {
  key: (h: string, inc: number) => (inc === 1 ? keys.get(h) : undefined),
  incarnation: (h: string) => (keys.has(h) ? 1 : undefined),
};
if (pinned) for (const pid of sc.pids) pin(pid, 1);
const wt = await NatsTransport.connect({ servers: sc.regions["us-east"]!.url, name: "w1" });
conns.push(wt);
const onVol = await newVolume("on");
const authority = new KeyAuthority("ka", "s-w");
authority.authorize(VOLUME, "w1");
const contract = "region-loss";
let onReceipt = () => {};
const writer = startVolumeWriter(
  {
    writerId: "w1",
    volume: VOLUME,
    term: 1,
    lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: Object.keys(sites) }],
    contracts: [{ name: contract, losses: ["region:us-east"] }],
    holderSites: sites,
    topologyEpoch: 1,
    policyGeneration: 1,
    maxUnitPayloadBytes: 64 * 1024,
    ...(longPasses ? { retainUntil: "receipted" as const } : {}),
  },
  {
    transport: wt,
    clock: systemClock,
    volume: onVol,
    dataKey: authority.dataKey(VOLUME, "w1"),
    peers,
    onReceipt: () => onReceipt(),
  },
);
// Protected latency: each write's sequence is stamped when the contract first covers it.
const protectedAt = new Map<number, number>();
let through = 0;
onReceipt = () => {
  const now = performance.now();
  const p = writer.protectedThrough(contract, "l0");
  for (let s = through + 1; s <= p; s++) protectedAt.set(s, now);
  through = Math.max(through, p);
};
const writeOff = async (lba: number, d: Uint8Array) => (await offWriter.write(lba, d)).lsn;
const writeOn = async (lba: number, d: Uint8Array) => (await writer.write(lba, d)).pieces[0]!.seq;
type Slice = Awaited<ReturnType<typeof drive>>;
const offSlices: Slice[] = [];
const onSlices: Slice[] = [];
for (let i = 0; i < SLICES; i++) {
  const n = Math.min(perSlice, WRITES - i * perSlice);
  offSlices.push(await drive(n, i * perSlice, writeOff));
  onSlices.push(await drive(n, i * perSlice, writeOn));
}
await offWriter.sync();
await writer.sync(contract, 30_000);
const merge = (xs: Slice[]): Slice => ({
  seconds: xs.reduce((a, x) => a + x.seconds, 0),
  cpuUs: xs.reduce((a, x) => a + x.cpuUs, 0),
  local: xs.flatMap((x) => x.local),
  keys: xs.flatMap((x) => x.keys),
});
const off = merge(offSlices);
const on = merge(onSlices);

// What the custody pipeline sustains end to end, and its latency when offered less than that.
const protect = () => writer.sync(contract, 60_000);
const sustainedStart = performance.now();
await drive(perSlice, 2 * WRITES, writeOn);
await protect();
const sustained = { iops: perSlice / ((performance.now() - sustainedStart) / 1000) };
const paceRate = RATE ?? Math.max(100, Math.round(sustained.iops / 2));
// The contract needs only the us-west holder: the other two may still be working off the pass's
// backlog on the shared CPU. The paced pass starts once every first hop has receipted everything.
const settleUntil = performance.now() + 30_000;
while (Object.keys(sites).some((h) => !writer.owedTo("l0", h).isEmpty) && performance.now() < settleUntil)
  await new Promise((r) => setTimeout(r, 10));
const pacedCount = pacedCountAt(paceRate);
const paced = await pacedWrites(pacedCount, 3 * WRITES, paceRate, QD, BLOCKS, writeOn, protect);
// Pacing goes on at the same rate (not measured), then the settled pass is measured.
const settleCount = Math.round(SETTLE_S * paceRate);
await pacedWrites(settleCount, 3 * WRITES + pacedCount, paceRate, QD, BLOCKS, writeOn, protect);
const settled = await pacedWrites(
  pacedCount,
  3 * WRITES + pacedCount + settleCount,
  paceRate,
  QD,
  BLOCKS,
  writeOn,
  protect,
);

// One more custody-on slice under the CPU profiler (not counted above): where the writer's time goes.
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.setSamplingInterval", { interval: 200 });
await session.post("Profiler.start");
await drive(Math.min(perSlice, 1000), WRITES, writeOn);
const { profile } = await session.post("Profiler.stop");
session.disconnect();
const breakdown = writerCpuBreakdown(profile as unknown as CpuProfile);
/** Each protected write's latency, from the time `start` gives it until the contract covered it. */
const latenciesFrom = <K extends { key: number }>(keys: readonly K[], start: (k: K) => number) =>
  keys.map((k) => (protectedAt.get(k.key) ?? NaN) - start(k)).filter((x) => Number.isFinite(x));
const due = (k: { t0: number }) => k.t0;
const protectedMs = latenciesFrom(on.keys, due);
const pacedMs = latenciesFrom(paced, due);
const settledMs = latenciesFrom(settled, due);
// The same writes from their local admission on: custody's own part, without the stalls of local
// admission, a volume batch held up on the shared machine (its p99 in 10 s passes: 3–54 ms from run
// to run, one commit).
const localAdmission = (k: PacedWrite) => k.admitted;
const pacedCustodyMs = latenciesFrom(paced, localAdmission);
const settledCustodyMs = latenciesFrom(settled, localAdmission);

writer.stop();
offWriter.stop();
await offVol.close();
for (const c of children) await c.signal("SIGKILL", 10_000);
for (const c of conns) await c.close();
await onVol.close();
await sc.stop();
rmSync(work, { recursive: true, force: true });

const iopsOff = WRITES / off.seconds;
const iopsOn = WRITES / on.seconds;
const rows = [
  {
    mode: "custody off (same writer)",
    iops: iopsOff,
    p50Local: pct(off.local, 50),
    p99Local: pct(off.local, 99),
    p50Prot: NaN,
    p99Prot: NaN,
  },
  {
    mode: "custody on (3 holders, 2 regions)",
    iops: iopsOn,
    p50Local: pct(on.local, 50),
    p99Local: pct(on.local, 99),
    p50Prot: pct(protectedMs, 50),
    p99Prot: pct(protectedMs, 99),
  },
];
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "-");
console.log(
  `bench:e2e  ${WRITES} writes of 4 KiB at qd${QD} per mode; protected = receipt proving "survive loss of us-east"`,
);
console.log(
  "mode                               write IOPS   p50 local ms  p99 local ms  p50 protected ms  p99 protected ms",
);
for (const r of rows)
  console.log(
    `${r.mode.padEnd(35)}${f(r.iops, 0).padStart(10)}   ${f(r.p50Local).padStart(12)}  ` +
      `${f(r.p99Local).padStart(12)}  ${f(r.p50Prot).padStart(16)}  ${f(r.p99Prot).padStart(16)}`,
  );
console.log(
  `ratio IOPS custody on / off: ${(iopsOn / iopsOff).toFixed(3)}   (protected samples: ` +
    `${protectedMs.length}/${WRITES})`,
);
const cpuOff = off.cpuUs / WRITES;
const cpuOn = on.cpuUs / WRITES;
console.log(
  `protected throughput: ${f(sustained.iops, 0)} writes/s (${perSlice} writes at qd${QD} until a protected sync ` +
    `covers them)`,
);
console.log(
  `paced at ${paceRate} writes/s: protected p50 ${f(pct(pacedMs, 50))} ms, p99 ${f(pct(pacedMs, 99))} ms ` +
    `(${pacedMs.length}/${pacedCount} samples, from each write's scheduled time)`,
);
console.log(
  `  … after ${SETTLE_S} s more at that rate: p50 ${f(pct(settledMs, 50))} ms, p99 ${f(pct(settledMs, 99))} ms ` +
    `(${settledMs.length}/${pacedCount} samples)`,
);
console.log(
  `  from local admission instead (custody's part): p50/p99 ` +
    (`${f(pct(pacedCustodyMs, 50))}/${f(pct(pacedCustodyMs, 99))} ms, settled ` +
      `${f(pct(settledCustodyMs, 50))}/${f(pct(settledCustodyMs, 99))} ms`),
);
console.log(
  `${pinned ? "pinned: writer alone on CPU 0, holders and nats-servers on CPU 1" : "unpinned"}; ${SLICES} ` +
    `interleaved slices per mode`,
);
console.log(
  `writer CPU per write: custody off ${f(cpuOff, 1)} µs, custody on ${f(cpuOn, 1)} µs (${f(cpuOn / cpuOff)}x)`,
);
console.log("where the writer's CPU goes with custody on (profiled slice, busy time):");
for (const b of breakdown)
  console.log(
    `  ${b.category.padEnd(42)}${f(100 * b.share, 1).padStart(6)} %   ~${f(b.share * cpuOn, 1).padStart(7)} µs/write`,
  );
if (json) {
  console.log(
    JSON.stringify({
      writes: WRITES,
      qd: QD,
      iops_custody_off: iopsOff,
      iops_custody_on: iopsOn,
      ratio_iops_custody_on_vs_off: iopsOn / iopsOff,
      p50_local_ms: pct(on.local, 50),
      p99_local_ms: pct(on.local, 99),
      p99_local_ms_custody_off: pct(off.local, 99),
      p50_protected_ms: pct(protectedMs, 50),
      p99_protected_ms: pct(protectedMs, 99),
      protected_iops: sustained.iops,
      paced_rate: paceRate,
      p50_protected_ms_paced: pct(pacedMs, 50),
      p99_protected_ms_paced: pct(pacedMs, 99),
      paced_s: PACED_S,
      settle_s: SETTLE_S,
      p50_protected_ms_paced_settled: pct(settledMs, 50),
      p99_protected_ms_paced_settled: pct(settledMs, 99),
      p50_custody_ms_paced: pct(pacedCustodyMs, 50),
      p99_custody_ms_paced: pct(pacedCustodyMs, 99),
      p50_custody_ms_paced_settled: pct(settledCustodyMs, 50),
      p99_custody_ms_paced_settled: pct(settledCustodyMs, 99),
      pinned,
      ratio_iops_custody_on_vs_off_pinned: pinned ? iopsOn / iopsOff : null,
      p99_local_ms_on_pinned: pinned ? pct(on.local, 99) : null,
      p99_local_ms_off_pinned: pinned ? pct(off.local, 99) : null,
      writer_cpu_us_per_write_on: cpuOn,
      writer_cpu_us_per_write_off: cpuOff,
      writer_cpu_breakdown_on: Object.fromEntries(breakdown.map((b) => [b.category, Number(b.share.toFixed(3))])),
    }),
  );
}
