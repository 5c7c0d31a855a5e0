/**
 * bench:holder — payload throughput through 1 and 3 holder hops over a real nats-server, next to
 * raw NATS publish → subscribe of the same unit sizes (4 KiB and 64 KiB) measured in the same run,
 * and the time from a unit's publish to the first receipt covering it (p50/p99).
 *
 * Every party (writer, holders, the raw publisher and subscriber) runs in this one process on its
 * own NATS connection, so the ratio compares per-unit cost on the same machine and server.
 *
 * - raw: bare nats.js publish → subscribe (no custody, no wrapper, the subscriber does nothing with
 *   the bytes); the publisher waits for the server every 4 MiB, as credits bound a holder's upstream.
 *   This is the baseline every ratio is against.
 * - least work: what any holder must do per unit whatever its bookkeeping — the sender frames the
 *   units, the receiver decodes each, verifies its SHA-256 digest and copies it into retained
 *   memory — with no credits, receipts, arena or actor. The gap between this row and raw is the
 *   cost of integrity and retention; the gap between it and the holder rows is custody overhead.
 * - holder rows: writer → h1 → … → hN, end to end: the clock stops when the LAST hop's signed
 *   receipt covers every unit; a controller loop releases receipted ranges so arenas recycle, as
 *   in production; each chain first carries a warm-up stream so the timed part runs in steady
 *   state. Units are encoded (with their digests) before the clock starts — that is the writer's
 *   work, not the holder's — and fed to the writer as a streaming writer produces them, at most
 *   two credit windows ahead.
 *
 * - security rows (1 hop): the same chain on a second nats-server with nkey authentication and
 *   TLS on the client port (tools/bench/secured-bench-server.ts), then also with writer-authenticated
 *   units (the writer signs batches of units, the holder verifies each attestation before it admits
 *   anything). `security_cost_pct_<size>` is the throughput lost against the unsecured 1-hop row of
 *   the same slice (median of per-slice ratios); the target is ≤ 15% at 64 KiB. The same cost is
 *   also measured as a deployment pays it, with the holder in its own process (writer and holder
 *   each doing their own TLS): `security_cost_process_pct_<size>`, against the unsecured
 *   own-process row of the same slice.
 *
 * - peer rows: what a user would pick instead of a holder hop — a JetStream R1 stream (file and
 *   memory storage) taking acked publishes with 64 in flight (tools/bench/jetstream-peer.ts) — beside a
 *   1-hop chain whose holder runs in its own node process (tools/bench/holder-process.ts), so both sides
 *   pay a process boundary: JetStream's storage work runs in nats-server, the holder's in its own
 *   process (its CPU is counted in the node column). That holder process is long-running, as a
 *   deployed one is: one per unit size and mode, started once, warmed for 2 s and then used by
 *   every slice on the same lane. `ratio_1hop_<size>_vs_jetstream_file` compares
 *   those two rows; `ratio_1hop_<size>_vs_least_work` compares the in-process 1-hop row with least work.
 *
 *   npm run bench:holder               # table
 *   npm run bench:holder -- --json     # table, then one JSON object on the last line
 *   npm run bench:holder -- --mb 64    # payload MiB per throughput row per slice (default 24; 3-hop rows use half)
 *   npm run bench:holder -- --slices 9  # interleaved slices (default 7)
 *   npm run bench:holder -- --core-rows # only raw, least work and the 1- and 3-hop rows: the rows
 *                                       # older commits' bench had, for side-by-side comparisons
 *                                       # (the other rows' servers, processes and heaps change the
 *                                       # process the shared rows run in)
 *
 * Throughput on this shared 2-core machine moves by ±30% from run to run, raw NATS included, so
 * rows are measured in interleaved slices and every figure is the median over slices; a ratio is
 * the median of the per-slice ratios, so a slow moment that hits both sides of a slice cancels out.
 */
import { readFileSync } from "node:fs";
import { generateHolderKeyPair } from "../../custody/index.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "../../actors/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import { startNatsServer } from "../../test/kit/index.ts";
import { encodedUnits } from "./encoded-units.ts";
import {
  carry,
  chain,
  CREDIT_WINDOW,
  nextUnits,
  RECEIPTS,
  VOLUME,
  watchLastHop,
  type ChainMode,
  type Driven,
} from "./holder-chain.ts";
import { leastWork, raw } from "./nats-baselines.ts";
import { processChain, type ChildConnect } from "./holder-process-chain.ts";
import { jetstreamAckedPublish, JETSTREAM_WINDOW } from "./jetstream-peer.ts";
import { startSecuredBenchServer } from "./secured-bench-server.ts";
import { median, percentile } from "./sample-stats.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const mbIndex = args.indexOf("--mb");
const payloadMiB = mbIndex >= 0 ? Number(args[mbIndex + 1]) : 24;
const slicesIndex = args.indexOf("--slices");
const slices = slicesIndex >= 0 ? Number(args[slicesIndex + 1]) : 7;
const coreRows = args.includes("--core-rows");
if (!Number.isFinite(payloadMiB) || payloadMiB <= 0 || !Number.isSafeInteger(slices) || slices < 1) {
  console.error("--mb needs a positive number and --slices a positive integer");
  process.exit(1);
}

// --core-rows runs the servers the older commits' bench ran: one, without JetStream (the peer
// rows need it) and without the secured server (the security rows need it), so a side-by-side
// comparison does not also compare a busier server.
const server = await startNatsServer({ jetstream: !coreRows });
const secured = coreRows ? undefined : await startSecuredBenchServer();
const conns: NatsTransport[] = [];
async function conn(name: string): Promise<NatsTransport> {
  const t = await NatsTransport.connect({ servers: server.url, name });
  conns.push(t);
  return t;
}
async function securedConn(name: string): Promise<NatsTransport> {
  const t = await secured!.connect(name);
  conns.push(t);
  return t;
}
/** The three ways a chain runs: unsecured; nkey auth + TLS; auth + TLS + writer-authenticated units. */
const writerKey = generateHolderKeyPair();
const MODES = {
  plain: { connect: conn, pid: () => server.pid, child: { servers: server.url } },
  tls: {
    connect: securedConn,
    pid: () => secured!.server.pid,
    child: secured?.connectOptions ?? { servers: server.url },
  },
  signed: {
    connect: securedConn,
    pid: () => secured!.server.pid,
    signed: writerKey,
    child: secured?.connectOptions ?? { servers: server.url },
  },
} satisfies Record<string, ChainMode & { pid(): number | undefined; child: ChildConnect }>;
type Mode = keyof typeof MODES;

/** CPU microseconds a process has used (user + system), from /proc. */
function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(stat[11]) + Number(stat[12])) * 1e6) / 100;
}

/** CPU microseconds used so far by node (this process and any holder `processes`) and by the nats-server `pid`. */
function cpuNow(pid = server.pid, processes: readonly number[] = []): { node: number; nats: number } {
  const u = process.cpuUsage();
  return { node: u.user + u.system + processes.reduce((sum, p) => sum + processCpuUs(p), 0), nats: processCpuUs(pid!) };
}

/** One measured row: payload MB/s and CPU µs per unit (this process, nats-server). */
interface Sample {
  mbPerS: number;
  nodeUsPerUnit: number;
  natsUsPerUnit: number;
}

async function timed(
  units: number,
  size: number,
  body: () => Promise<void>,
  pid = server.pid,
  processes: readonly number[] = [],
): Promise<Sample> {
  const c0 = cpuNow(pid, processes);
  const t0 = performance.now();
  await body();
  const secs = (performance.now() - t0) / 1000;
  const c1 = cpuNow(pid, processes);
  return {
    mbPerS: (size * units) / secs / 1e6,
    nodeUsPerUnit: (c1.node - c0.node) / units,
    natsUsPerUnit: (c1.nats - c0.nats) / units,
  };
}

/**
 * Times `batch` (from nextUnits) through a driven chain; `processes` are holder processes whose CPU counts as node's.
 */
async function timedCarry(
  d: Driven,
  size: number,
  batch: ReturnType<typeof nextUnits>,
  modeName: Mode,
  processes: readonly number[] = [],
): Promise<Sample & { unitsPerMessage: number }> {
  const count = batch.units.count;
  const m0 = d.c.writer.messagesSent;
  const u0 = d.c.writer.unitsSent;
  const sample = await timed(count, size, () => carry(d, size, batch), MODES[modeName].pid(), processes);
  return { ...sample, unitsPerMessage: (d.c.writer.unitsSent - u0) / Math.max(1, d.c.writer.messagesSent - m0) };
}

/** Baseline rows on the main server, timed like every other row. */
const rawRow = (size: number, count: number) => raw(server.url, size, count, (body) => timed(count, size, body));
const leastWorkRow = (size: number, count: number) =>
  leastWork(server.url, size, count, (body) => timed(count, size, body));

/**
 * Own-process holders, one per unit size and mode, kept for the whole run on one lane: a deployed
 * holder is a long-running process, as nats-server (which does the JetStream rows' work) is. A
 * fresh process per slice measured its first few thousand units — V8 still compiling its per-unit
 * paths — which halved these rows against a warm process (figures: docs/performance.md).
 */
const processHolders = new Map<string, Driven & { pid: number }>();
/** How long a new holder process carries traffic before its first measured slice. */
const PROCESS_WARM_MS = 2000;

async function processHolder(size: number, modeName: Mode): Promise<Driven & { pid: number }> {
  const key = `${size}:${modeName}`;
  let d = processHolders.get(key);
  if (!d) {
    const mode = MODES[modeName];
    const c = await processChain(mode.child, size, mode);
    d = { c, w: await watchLastHop(c, mode), next: 1, pid: c.pid };
    processHolders.set(key, d);
    const chunk = Math.ceil((24 << 20) / size);
    const t0 = performance.now();
    while (performance.now() - t0 < PROCESS_WARM_MS) await carry(d, size, nextUnits(d, size, chunk));
  }
  return d;
}

/**
 * `count` units of `size` through `hops` holders, end to end. An in-process chain is new for each
 * call and first carries a warm-up stream of the same size, so timing starts in steady state:
 * arena segments are being recycled (a fresh segment's first touch costs page faults that a
 * long-running holder pays once) and connections are warm; the process's JIT is warm from earlier
 * rows. `"process"` drives the long-running own-process holder of this size and mode.
 */
async function throughHolders(
  hops: number | "process",
  size: number,
  count: number,
  modeName: Mode = "plain",
): Promise<Sample & { unitsPerMessage: number }> {
  if (hops === "process") {
    const d = await processHolder(size, modeName);
    return timedCarry(d, size, nextUnits(d, size, count), modeName, [d.pid]);
  }
  const mode = MODES[modeName];
  const c = await chain(hops, size, mode);
  const d: Driven = { c, w: await watchLastHop(c, mode), next: 1 };
  // Both streams are encoded before the warm-up, so the garbage of encoding is collected before the clock starts.
  const warm = nextUnits(d, size, Math.min(count, Math.ceil((24 << 20) / size)));
  const batch = nextUnits(d, size, count);
  await carry(d, size, warm);
  const sample = await timedCarry(d, size, batch, modeName);
  d.w.stop();
  await c.close();
  return sample;
}

/** A JetStream peer row: R1 stream of `storage`, acked publishes with a window (tools/bench/jetstream-peer.ts). */
async function jetstreamRow(storage: "file" | "memory", size: number, count: number): Promise<Sample> {
  let sample: Sample | undefined;
  await jetstreamAckedPublish(server.url, storage, size, count, async (body) => {
    sample = await timed(count, size, body);
  });
  return sample!;
}

/** Publish → first receipt latency for `samples` units sent one at a time; ms values. */
async function receiptLatency(size: number, samples: number): Promise<number[]> {
  const c = await chain(1, size, MODES.plain);
  const units = encodedUnits(VOLUME, c.lane, size, samples);
  const w = await watchLastHop(c, MODES.plain);
  await new Promise((r) => setTimeout(r, 50)); // initial credit
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const seq = i + 1;
    const got = new Promise<void>((resolve) => w.onReceipt(() => w.covered().has(seq) && resolve()));
    const t0 = performance.now();
    c.writer.send(units.at(i));
    await got;
    out.push(performance.now() - t0);
  }
  w.stop();
  await c.close();
  return out.sort((a, b) => a - b);
}

type Row =
  | `${"raw" | "least" | "js_file" | "js_mem" | "proc"}${"4k" | "64k"}`
  | `${"hop1_" | "tls" | "signed" | "hop3_" | "proc_signed"}${"4k" | "64k"}`;
type Measured = Sample & { unitsPerMessage?: number };

try {
  const bytes = payloadMiB * 1024 * 1024;
  const n4k = Math.round(bytes / 4096);
  const n64k = Math.round(bytes / 65536);
  // Warm-up (JIT, connections) on a small run of each path.
  await rawRow(4096, 2000);
  await leastWorkRow(4096, 2000);
  await throughHolders(1, 4096, 2000);
  if (!coreRows) {
    await throughHolders(1, 4096, 2000, "signed");
    await throughHolders("process", 4096, 2000);
    await jetstreamRow("file", 4096, 2000);
  }

  const allRows: [Row, () => Promise<Measured>][] = [
    ["raw4k", () => rawRow(4096, n4k)],
    ["least4k", () => leastWorkRow(4096, n4k)],
    ["hop1_4k", () => throughHolders(1, 4096, n4k)],
    ["tls4k", () => throughHolders(1, 4096, n4k, "tls")],
    ["signed4k", () => throughHolders(1, 4096, n4k, "signed")],
    ["hop3_4k", () => throughHolders(3, 4096, Math.ceil(n4k / 2))],
    ["proc4k", () => throughHolders("process", 4096, n4k)],
    ["proc_signed4k", () => throughHolders("process", 4096, n4k, "signed")],
    ["js_file4k", () => jetstreamRow("file", 4096, n4k)],
    ["js_mem4k", () => jetstreamRow("memory", 4096, n4k)],
    ["raw64k", () => rawRow(65536, n64k)],
    ["least64k", () => leastWorkRow(65536, n64k)],
    ["hop1_64k", () => throughHolders(1, 65536, n64k)],
    ["tls64k", () => throughHolders(1, 65536, n64k, "tls")],
    ["signed64k", () => throughHolders(1, 65536, n64k, "signed")],
    ["hop3_64k", () => throughHolders(3, 65536, Math.ceil(n64k / 2))],
    ["proc64k", () => throughHolders("process", 65536, n64k)],
    ["proc_signed64k", () => throughHolders("process", 65536, n64k, "signed")],
    ["js_file64k", () => jetstreamRow("file", 65536, n64k)],
    ["js_mem64k", () => jetstreamRow("memory", 65536, n64k)],
  ];
  const core = new Set<Row>(["raw4k", "least4k", "hop1_4k", "hop3_4k", "raw64k", "least64k", "hop1_64k", "hop3_64k"]);
  const plan = coreRows ? allRows.filter(([r]) => core.has(r)) : allRows;
  const got = new Map<Row, Measured[]>(allRows.map(([r]) => [r, []]));
  for (let slice = 0; slice < slices; slice++) {
    for (const [row, run] of plan) got.get(row)!.push(await run());
  }
  const med = (row: Row, f: (s: Measured) => number) => median(got.get(row)!.map(f));
  const mbs = (row: Row) => med(row, (s) => s.mbPerS);
  /** Median over slices of row / base measured in the same slice. */
  const ratio = (row: Row, base: Row) => median(got.get(row)!.map((s, i) => s.mbPerS / got.get(base)![i]!.mbPerS));
  const spread = (row: Row) => {
    const xs = got.get(row)!.map((s) => s.mbPerS);
    return `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
  };
  const lat = await receiptLatency(4096, 300);

  const rows: [string, Row, Row][] = [
    ["raw NATS pub→sub 4 KiB", "raw4k", "raw4k"],
    ["least work (verify + copy)", "least4k", "raw4k"],
    ["1 holder hop 4 KiB", "hop1_4k", "raw4k"],
    ["  … auth+TLS", "tls4k", "raw4k"],
    ["  … auth+TLS+unit sigs", "signed4k", "raw4k"],
    ["3 holder hops 4 KiB", "hop3_4k", "raw4k"],
    ["1 hop, holder own process", "proc4k", "raw4k"],
    ["  … auth+TLS+unit sigs", "proc_signed4k", "raw4k"],
    ["JetStream R1 file, acked", "js_file4k", "raw4k"],
    ["JetStream R1 memory, acked", "js_mem4k", "raw4k"],
    ["raw NATS pub→sub 64 KiB", "raw64k", "raw64k"],
    ["least work (verify + copy)", "least64k", "raw64k"],
    ["1 holder hop 64 KiB", "hop1_64k", "raw64k"],
    ["  … auth+TLS", "tls64k", "raw64k"],
    ["  … auth+TLS+unit sigs", "signed64k", "raw64k"],
    ["3 holder hops 64 KiB", "hop3_64k", "raw64k"],
    ["1 hop, holder own process", "proc64k", "raw64k"],
    ["  … auth+TLS+unit sigs", "proc_signed64k", "raw64k"],
    ["JetStream R1 file, acked", "js_file64k", "raw64k"],
    ["JetStream R1 memory, acked", "js_mem64k", "raw64k"],
  ];
  console.log(
    `bench:holder — ${payloadMiB} MiB of payload per row and slice (3-hop rows half), median of ${slices} ` +
      `interleaved slices, one process, one nats-server (${server.url})`,
  );
  console.log(
    `holders: RAM only, ${CREDIT_WINDOW >> 20} MiB credit window, receipts every ${RECEIPTS.maxUnits} units or ` +
      `${RECEIPTS.maxDelayMs} ms, frames up to ${DEFAULT_MAX_FRAME_BYTES >> 10} KiB; raw: bare nats.js`,
  );
  console.log(
    "path".padEnd(30) +
      "MB/s".padStart(8) +
      "(range)".padStart(11) +
      "vs raw".padStart(8) +
      "node µs/unit".padStart(14) +
      "nats µs/unit".padStart(14) +
      "units/msg".padStart(11),
  );
  for (const [name, row, base] of rows) {
    if (got.get(row)!.length === 0) continue; // not measured (--core-rows)
    const upm = got.get(row)![0]!.unitsPerMessage;
    console.log(
      name.padEnd(30) +
        mbs(row).toFixed(1).padStart(8) +
        spread(row).padStart(11) +
        `${ratio(row, base).toFixed(2)}×`.padStart(8) +
        med(row, (s) => s.nodeUsPerUnit)
          .toFixed(1)
          .padStart(14) +
        med(row, (s) => s.natsUsPerUnit)
          .toFixed(1)
          .padStart(14) +
        (upm === undefined ? "1" : med(row, (s) => s.unitsPerMessage ?? 1).toFixed(1)).padStart(11),
    );
  }
  console.log(
    `publish → first receipt (1 hop, 4 KiB, ${lat.length} samples): p50 ${percentile(lat, 50).toFixed(2)} ms, p99 ` +
      `${percentile(lat, 99).toFixed(2)} ms`,
  );
  /** Throughput lost to security, % of the unsecured 1-hop row measured in the same slice (median). */
  const cost = (row: Row, base: Row) => (1 - ratio(row, base)) * 100;
  if (!coreRows)
    console.log(
      `security cost, 1 hop, vs unsecured in the same slice: auth+TLS 4 KiB ` +
        (`${cost("tls4k", "hop1_4k").toFixed(1)}%, 64 KiB ${cost("tls64k", "hop1_64k").toFixed(1)}%; auth+TLS+unit ` +
          (`signatures 4 KiB ${cost("signed4k", "hop1_4k").toFixed(1)}%, 64 KiB ` +
            `${cost("signed64k", "hop1_64k").toFixed(1)}% (target ≤ 15% at 64 KiB)`)),
    );
  if (!coreRows)
    console.log(
      `security cost, 1 hop, holder in its own process as deployed (writer and holder each pay their own TLS): ` +
        (`auth+TLS+unit signatures 4 KiB ${cost("proc_signed4k", "proc4k").toFixed(1)}%, 64 KiB ` +
          `${cost("proc_signed64k", "proc64k").toFixed(1)}%`),
    );
  console.log(
    `target: 1 hop ≥ 0.5× raw — 4 KiB ${ratio("hop1_4k", "raw4k").toFixed(2)}×, 64 KiB ` +
      `${ratio("hop1_64k", "raw64k").toFixed(2)}×`,
  );
  console.log(
    `target: 1 hop ≥ 0.9× least work — 4 KiB ${ratio("hop1_4k", "least4k").toFixed(2)}×, 64 KiB ` +
      `${ratio("hop1_64k", "least64k").toFixed(2)}×`,
  );
  if (!coreRows)
    console.log(
      `target: 1 hop (holder in its own process) vs JetStream R1 file, ${JETSTREAM_WINDOW} acks in flight — 4 KiB ` +
        (`${ratio("proc4k", "js_file4k").toFixed(2)}× (≥ 2), 64 KiB ${ratio("proc64k", "js_file64k").toFixed(2)}× (≥ ` +
          (`1); vs memory storage ${ratio("proc4k", "js_mem4k").toFixed(2)}×, ` +
            `${ratio("proc64k", "js_mem64k").toFixed(2)}×`)),
    );
  if (json) {
    console.log(
      JSON.stringify({
        slices,
        raw_4k_mb_per_s: mbs("raw4k"),
        raw_64k_mb_per_s: mbs("raw64k"),
        least_work_4k_mb_per_s: mbs("least4k"),
        least_work_64k_mb_per_s: mbs("least64k"),
        hop1_4k_mb_per_s: mbs("hop1_4k"),
        hop1_64k_mb_per_s: mbs("hop1_64k"),
        hop3_4k_mb_per_s: mbs("hop3_4k"),
        hop3_64k_mb_per_s: mbs("hop3_64k"),
        ratio_1hop_4k_vs_raw: ratio("hop1_4k", "raw4k"),
        ratio_1hop_64k_vs_raw: ratio("hop1_64k", "raw64k"),
        ratio_3hop_4k_vs_raw: ratio("hop3_4k", "raw4k"),
        ratio_3hop_64k_vs_raw: ratio("hop3_64k", "raw64k"),
        ratio_least_work_4k_vs_raw: ratio("least4k", "raw4k"),
        ratio_least_work_64k_vs_raw: ratio("least64k", "raw64k"),
        ratio_1hop_4k_vs_least_work: ratio("hop1_4k", "least4k"),
        ratio_1hop_64k_vs_least_work: ratio("hop1_64k", "least64k"),
        hop1_process_4k_mb_per_s: mbs("proc4k"),
        hop1_process_64k_mb_per_s: mbs("proc64k"),
        jetstream_file_4k_mb_per_s: mbs("js_file4k"),
        jetstream_file_64k_mb_per_s: mbs("js_file64k"),
        jetstream_memory_4k_mb_per_s: mbs("js_mem4k"),
        jetstream_memory_64k_mb_per_s: mbs("js_mem64k"),
        ratio_1hop_4k_vs_jetstream_file: ratio("proc4k", "js_file4k"),
        ratio_1hop_64k_vs_jetstream_file: ratio("proc64k", "js_file64k"),
        ratio_1hop_4k_vs_jetstream_memory: ratio("proc4k", "js_mem4k"),
        ratio_1hop_64k_vs_jetstream_memory: ratio("proc64k", "js_mem64k"),
        node_us_per_unit_1hop_4k: med("hop1_4k", (s) => s.nodeUsPerUnit),
        node_us_per_unit_raw_4k: med("raw4k", (s) => s.nodeUsPerUnit),
        node_us_per_unit_least_work_4k: med("least4k", (s) => s.nodeUsPerUnit),
        units_per_message_1hop_4k: med("hop1_4k", (s) => s.unitsPerMessage ?? 1),
        unsecured_4k_mb_s: mbs("hop1_4k"),
        unsecured_64k_mb_s: mbs("hop1_64k"),
        auth_tls_4k_mb_s: mbs("tls4k"),
        auth_tls_64k_mb_s: mbs("tls64k"),
        secured_4k_mb_s: mbs("signed4k"),
        secured_64k_mb_s: mbs("signed64k"),
        auth_tls_cost_pct_4k: cost("tls4k", "hop1_4k"),
        auth_tls_cost_pct_64k: cost("tls64k", "hop1_64k"),
        security_cost_pct_4k: cost("signed4k", "hop1_4k"),
        security_cost_pct_64k: cost("signed64k", "hop1_64k"),
        security_cost_process_pct_4k: cost("proc_signed4k", "proc4k"),
        security_cost_process_pct_64k: cost("proc_signed64k", "proc64k"),
        receipt_p50_ms: percentile(lat, 50),
        receipt_p99_ms: percentile(lat, 99),
      }),
    );
  }
} finally {
  for (const d of processHolders.values()) {
    d.w.stop();
    await d.c.close().catch(() => undefined);
  }
  for (const c of conns) await c.close().catch(() => undefined);
  await server.stop();
  await secured?.stop();
}
