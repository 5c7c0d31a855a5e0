/**
 * bench:arena — how much an arena append costs next to a plain memory copy, and how much process
 * memory a retained payload byte costs.
 *
 * Throughput: for 4 KiB and 64 KiB units, `Arena.append` of N units (copy into the lane's
 * preallocated 1 MiB segment + compact per-unit metadata) against `Buffer.copy` of the same payload
 * bytes into one preallocated pool of the same total size, measured round-robin in the same run.
 * Each round moves `--mb` MiB (default 128), far beyond the CPU caches, into memory already touched
 * by a warm-up round on both sides (so neither side pays first-touch page faults or runs in cache).
 * Time is CPU time of this process (user + system), so a busy shared host does not skew one side.
 * Digest validation is a separate step of admission and is not timed here.
 *
 * Memory: RSS (and V8 heap + ArrayBuffer) growth with 100 000 retained 4 KiB units, per retained
 * payload byte, measured after a full GC (the script re-spawns itself with --expose-gc).
 *
 *   npm run bench:arena               # table
 *   npm run bench:arena -- --json     # table, then one JSON object on the last line
 *   npm run bench:arena -- --mb 64    # MiB per throughput round (default 128)
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Arena } from "../../arena/index.ts";
import { formatTable, systemClock } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  // Re-run with --expose-gc so memory is measured after a full collection.
  const r = spawnSync(
    process.execPath,
    ["--expose-gc", "--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: "inherit" },
  );
  process.exit(r.status ?? 1);
}

const args = process.argv.slice(2);
const json = args.includes("--json");
const mbAt = args.indexOf("--mb");
const roundMiB = mbAt >= 0 ? Number(args[mbAt + 1]) : 128;
if (!Number.isFinite(roundMiB) || roundMiB < 8) {
  console.error("--mb needs a number >= 8");
  process.exit(1);
}
const MiB = 1024 * 1024;
const ROUNDS = 7;
const RETAINED_UNITS = 100_000;

/** A few distinct source payloads (reused), so the sources stay small and the targets are cold. */
function sources(size: number): Buffer[] {
  return Array.from({ length: 16 }, (_, i) => Buffer.alloc(size, i + 1));
}

/**
 * A small ring of unit objects, renumbered as they are appended: like units fresh off the wire,
 * their headers are cache-hot. (Pre-building N unit objects would charge the arena for cache misses
 * on N scattered JS objects that the copy side never reads.)
 */
function ring(size: number): TransportUnit[] {
  const digest = new Uint8Array(32).fill(7);
  return sources(size).map((payload, i) => ({
    volume: "vol",
    lane: "l0",
    term: 1,
    firstSeq: i + 1,
    lastSeq: i + 1,
    commitTs: [1_700_000_000_000 + i],
    payload,
    digest,
  }));
}

function newArena(capacityMiB: number): Arena {
  const capacity = Math.ceil(capacityMiB / 16) * 16 * MiB;
  return new Arena(
    { initialBytes: capacity, hardLimitBytes: Math.max(capacity, 1024 * MiB), maxOpenDelayMs: 1_000_000 },
    systemClock,
  );
}

/** CPU time (user + system, ns) of `fn`: robust to this process being descheduled on a busy host. */
function cpuNs(fn: () => void): number {
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) * 1000;
}

/** Appends `count` units into the arena, then (untimed) seals and releases them so segments recycle. */
function arenaRound(arena: Arena, units: TransportUnit[], count: number, seqFrom: number): number {
  arena.grant("vol", "l0", 2 ** 40); // granted up to what the arena can land
  let seq = seqFrom;
  const ns = cpuNs(() => {
    for (let i = 0; i < count; i++) {
      const u = units[i & 15]!;
      u.firstSeq = u.lastSeq = ++seq;
      arena.append(u);
    }
  });
  arena.seal("vol", "l0");
  arena.release("vol", "l0", RangeSet.of(seqFrom + 1, seq));
  arena.revoke("vol", "l0");
  return ns;
}

function copyRound(pool: Buffer, units: TransportUnit[], count: number, seqFrom: number): number {
  let seq = seqFrom;
  return cpuNs(() => {
    let off = 0;
    for (let i = 0; i < count; i++) {
      const u = units[i & 15]!;
      u.firstSeq = u.lastSeq = ++seq;
      off += (u.payload as Buffer).copy(pool, off);
    }
  });
}

function throughput(size: number) {
  const count = Math.floor((roundMiB * MiB) / size);
  const units = ring(size);
  const arena = newArena(roundMiB * 1.5);
  const pool = Buffer.alloc(count * size);
  let seq = 0;
  for (let w = 0; w < 2; w++) {
    // Warm-up: allocates and touches every segment and the pool, and lets the JIT settle.
    arenaRound(arena, units, count, seq);
    copyRound(pool, units, count, seq);
    seq += count;
  }
  const a: number[] = [];
  const c: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    seq += count;
    a.push(arenaRound(arena, units, count, seq));
    c.push(copyRound(pool, units, count, seq));
  }
  // Rounds are interleaved, so each (append, copy) pair saw the same host conditions: the headline
  // is the median of the paired ratios. Best rounds are shown as absolute speeds.
  const best = (xs: number[]) => Math.min(...xs);
  const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!;
  const ratios = a.map((ns, r) => c[r]! / ns);
  const bytes = count * size;
  const gbps = (ns: number) => bytes / ns; // bytes per ns = GB/s
  return {
    size,
    count,
    arenaGBs: gbps(best(a)),
    copyGBs: gbps(best(c)),
    ratio: median(ratios),
    bestRatio: best(c) / best(a),
    minRatio: Math.min(...ratios),
    maxRatio: Math.max(...ratios),
  };
}

function memory() {
  gc!();
  gc!();
  const before = process.memoryUsage();
  const arena = newArena(512);
  arena.grant("vol", "l0", 2 ** 40);
  const src = sources(4096);
  const digest = new Uint8Array(32).fill(7);
  const ts = [1_700_000_000_000];
  for (let i = 0; i < RETAINED_UNITS; i++) {
    arena.append({
      volume: "vol",
      lane: "l0",
      term: 1,
      firstSeq: i + 1,
      lastSeq: i + 1,
      commitTs: ts,
      payload: src[i % src.length]!,
      digest,
    });
  }
  gc!();
  gc!();
  const after = process.memoryUsage();
  const payload = RETAINED_UNITS * 4096;
  const report = arena.report();
  return {
    payload,
    rssPerByte: (after.rss - before.rss) / payload,
    jsPerByte: (after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / payload,
    segments: report.segments.open + report.segments.sealed,
    retainedUnits: arena.segmentsOf("vol", "l0").reduce((n, id) => n + arena.describe(id).unitCount, 0),
  };
}

const mem = memory();
const t4 = throughput(4 * 1024);
const t64 = throughput(64 * 1024);

const rows = [t4, t64].map((t) => ({
  unit: `${t.size / 1024} KiB`,
  units_per_round: t.count,
  "arena append GB/s": t.arenaGBs.toFixed(2),
  "Buffer.copy GB/s": t.copyGBs.toFixed(2),
  "append / copy (median of pairs)": t.ratio.toFixed(2),
  "pair range": `${t.minRatio.toFixed(2)}..${t.maxRatio.toFixed(2)}`,
  "best / best": t.bestRatio.toFixed(2),
  target: ">= 0.50",
}));
console.log(
  `arena append vs Buffer.copy (GB per CPU-second), ${roundMiB} MiB per round, ${ROUNDS} interleaved round pairs`,
);
console.log(formatTable(rows));
console.log();
console.log(
  `memory with ${mem.retainedUnits} retained 4 KiB units (${(mem.payload / MiB).toFixed(1)} MiB payload, ` +
    `${mem.segments} segments of 1 MiB)`,
);
console.log(
  formatTable([
    { measure: "RSS growth per payload byte", value: mem.rssPerByte.toFixed(4), target: "<= 1.10" },
    { measure: "V8 heap + ArrayBuffer growth per payload byte", value: mem.jsPerByte.toFixed(4), target: "" },
  ]),
);
if (json) {
  console.log(
    JSON.stringify({
      memory_overhead_bytes_per_byte: Number(mem.rssPerByte.toFixed(4)),
      memory_js_bytes_per_byte: Number(mem.jsPerByte.toFixed(4)),
      ratio_append_4k_vs_copy: Number(t4.ratio.toFixed(3)),
      ratio_append_64k_vs_copy: Number(t64.ratio.toFixed(3)),
      ratio_append_4k_vs_copy_best: Number(t4.bestRatio.toFixed(3)),
      ratio_append_64k_vs_copy_best: Number(t64.bestRatio.toFixed(3)),
      ratio_append_4k_vs_copy_range: [Number(t4.minRatio.toFixed(3)), Number(t4.maxRatio.toFixed(3))],
      ratio_append_64k_vs_copy_range: [Number(t64.minRatio.toFixed(3)), Number(t64.maxRatio.toFixed(3))],
      append_4k_gb_s: Number(t4.arenaGBs.toFixed(3)),
      copy_4k_gb_s: Number(t4.copyGBs.toFixed(3)),
      append_64k_gb_s: Number(t64.arenaGBs.toFixed(3)),
      copy_64k_gb_s: Number(t64.copyGBs.toFixed(3)),
      retained_units: mem.retainedUnits,
      round_mib: roundMiB,
    }),
  );
}
