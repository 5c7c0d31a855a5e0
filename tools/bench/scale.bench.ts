/**
 * bench:scale — how the controller's evaluation and the receipt ledger grow with holders, volumes
 * and retained ranges. For each point of the grid it builds one ledger per volume from signed
 * receipt batches (as a controller's ledger is fed), then times evaluation rounds: per volume,
 * `ledger.holdings → buildEvaluationState → evaluateState`, the work a controller does each round.
 * The slope is the least-squares exponent of round time against holders × volumes × ranges; 1.0 is
 * linear. Ledger memory per volume is the heap growth (after GC) of building the ledgers.
 *
 *   npm run bench:scale                 # table
 *   npm run bench:scale -- --json       # table, then one JSON object on the last line
 *   npm run bench:scale -- --quick      # a smaller grid (1–100 volumes)
 *
 * Then one holder (in this process, over a real nats-server) serves 1, 100 and 1,000 lanes:
 * its heap and buffer growth per idle lane, and its throughput when every lane is active at once
 * (one credit sender per lane on a shared writer connection) against one busy lane
 * carrying the same bytes, each until the holder's receipts cover every unit.
 */
import { readFileSync } from "node:fs";
import { systemClock } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import {
  generateHolderKeyPair,
  makeReceipt,
  makeReceiptBatch,
  publicKeyFromRaw,
  receiptStream,
  ReceiptLedger,
  signReceiptBatch,
  type ReceiptVerifyContext,
} from "../../custody/index.ts";
import { evaluateState, parseEvaluationState, type EvaluationState } from "../../policies/index.ts";
import { buildEvaluationState, type VolumeTopology } from "../../actors/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import { measureHolderLanes } from "./scale-holder-lanes.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const quick = args.includes("--quick");
const HOLDERS = [1, 3, 10];
const VOLUMES = quick ? [1, 10, 100] : [1, 100, 1000];
const RANGES = [1, 100, 1000];
const ROUNDS = 3;
const SEQS_PER_RANGE = 10;
const LANE = "l0";

// Sites, links, recovery and scenarios of the memo's worked example; holders are synthetic.
const example = parseEvaluationState(
  JSON.parse(readFileSync(new URL("../../examples/memo-worked-example.state.json", import.meta.url), "utf8")),
) as EvaluationState;
const holderSites = example.sites.map((s) => s.id).filter((id) => id !== example.source.site);
const clock = { ...systemClock, now: () => example.asOfMs };
const keys = Array.from({ length: Math.max(...HOLDERS) }, () => generateHolderKeyPair());
const publicKeys = keys.map((k) => publicKeyFromRaw(k.publicKey));

function topology(volume: string, holders: number): VolumeTopology {
  return {
    volume,
    lanes: [LANE],
    writerSite: example.source.site,
    sites: example.sites,
    holderSites: Object.fromEntries(
      Array.from({ length: holders }, (_, h) => [`h${h}`, holderSites[h % holderSites.length]!]),
    ),
    bases: [],
    keyAuthorities: example.keyAuthorities,
    ...(example.metadataQuorum ? { metadataQuorum: example.metadataQuorum } : {}),
    links: example.links,
    recovery: example.recovery,
    scenarios: example.scenarios,
    timelines: example.timelines,
    staleAfterMs: 60_000,
    releasable: [],
  };
}

/** Holder `h` retains `ranges` ranges of the lane, staggered so the holders' ranges differ. */
function retainedBy(h: number, ranges: number): RangeSet {
  return RangeSet.from(
    Array.from(
      { length: ranges },
      (_, i) => [i * SEQS_PER_RANGE + 1 + (h % 3), i * SEQS_PER_RANGE + SEQS_PER_RANGE - 1] as const,
    ),
  );
}

/** One volume's ledger, fed one signed batch per holder. */
function buildLedger(volume: string, holders: number, ranges: number): ReceiptLedger {
  const ledger = new ReceiptLedger({ clock, maxEvidenceAgeMs: 60_000 });
  const stream = receiptStream(volume, LANE);
  for (let h = 0; h < holders; h++) {
    const holder = { holderId: `h${h}`, incarnation: 1 };
    const at = example.asOfMs - 100;
    const receipt = makeReceipt({
      holder,
      volume,
      lane: LANE,
      receiptSeq: 1,
      issuedAt: at,
      writerTerm: 1,
      topologyEpoch: 1,
      policyGeneration: 1,
      retained: retainedBy(h, ranges),
      prefixBase: 1,
      payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
      residency:
        h % 2 === 1
          ? { kind: "disk", capabilityGeneration: 1, observedAt: at, file: "spill", offset: 0, length: 1, syncedAt: at }
          : { kind: "ram", capabilityGeneration: 1, observedAt: at },
      obligation: {
        obligationId: obligationIdOf(volume, LANE),
        releaseAuthority: { kind: "control_log", region: "bench" },
      },
      extensions: [],
    });
    const ctx: ReceiptVerifyContext = {
      stream,
      holderKey: (id, inc) => (id === holder.holderId && inc === 1 ? publicKeys[h] : undefined),
      currentIncarnation: (id) => (id === holder.holderId ? 1 : undefined),
      topologyEpoch: 1,
      policyGeneration: 1,
      released: () => RangeSet.EMPTY,
    };
    ledger.apply(signReceiptBatch(makeReceiptBatch(stream, holder, at, [receipt]), keys[h]!.privateKey), ctx);
  }
  return ledger;
}

const gc = (globalThis as { gc?: () => void }).gc;
function heapAfterGc(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Point {
  holders: number;
  volumes: number;
  ranges: number;
  volumeP50: number;
  volumeP99: number;
  roundMs: number;
  ledgerBytesPerVolume: number;
}

const points: Point[] = [];
let sink = 0;
for (const holders of HOLDERS) {
  for (const volumes of VOLUMES) {
    for (const ranges of RANGES) {
      const before = heapAfterGc();
      const vols = Array.from({ length: volumes }, (_, v) => {
        const volume = `vol-${v}`;
        return { topo: topology(volume, holders), ledger: buildLedger(volume, holders, ranges) };
      });
      const ledgerBytesPerVolume = Math.max(0, (heapAfterGc() - before) / volumes);
      const heads = { [LANE]: ranges * SEQS_PER_RANGE };
      const commits = [
        {
          lane: LANE,
          first: 1,
          last: ranges * SEQS_PER_RANGE,
          committedAtMs: example.asOfMs - 1_000,
          bytesPerSeq: 4096,
        },
      ];
      const perVolume: number[] = [];
      const rounds: number[] = [];
      for (let r = 0; r <= ROUNDS; r++) {
        const roundStart = performance.now();
        for (const { topo, ledger } of vols) {
          const t0 = performance.now();
          const state = buildEvaluationState(
            topo,
            ledger.holdings({ volume: topo.volume }),
            { heads, commits },
            example.asOfMs,
            new Set(),
          );
          sink += evaluateState(state).reports.length;
          if (r > 0) perVolume.push(performance.now() - t0); // round 0 warms up
        }
        if (r > 0) rounds.push(performance.now() - roundStart);
      }
      perVolume.sort((a, b) => a - b);
      rounds.sort((a, b) => a - b);
      points.push({
        holders,
        volumes,
        ranges,
        volumeP50: percentile(perVolume, 50),
        volumeP99: percentile(perVolume, 99),
        roundMs: percentile(rounds, 50),
        ledgerBytesPerVolume,
      });
    }
  }
}

/**
 * Least-squares slope of log(round time) against log(holders × volumes × ranges), over the larger points (fixed costs
 * dominate tiny ones).
 */
function slopeExponent(ps: readonly Point[]): number {
  const xs = ps
    .filter((p) => p.holders * p.volumes * p.ranges >= 1_000)
    .map((p) => [Math.log(p.holders * p.volumes * p.ranges), Math.log(p.roundMs)] as const);
  const mx = xs.reduce((a, [x]) => a + x, 0) / xs.length;
  const my = xs.reduce((a, [, y]) => a + y, 0) / xs.length;
  const num = xs.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const den = xs.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return num / den;
}

const fmt = (n: number, d = 2) => n.toFixed(d);
console.log(
  `bench:scale — controller evaluation per volume (ledger → state → evaluate), ${ROUNDS} rounds per ` +
    `point${gc ? "" : " (no --expose-gc: memory figures are rough)"}`,
);
console.log("holders  volumes  ranges/holder   vol p50 ms   vol p99 ms   round ms   ledger KiB/volume");
for (const p of points) {
  console.log(
    `${String(p.holders).padStart(7)}  ${String(p.volumes).padStart(7)}  ${String(p.ranges).padStart(13)}   ` +
      (`${fmt(p.volumeP50, 3).padStart(10)}   ${fmt(p.volumeP99, 3).padStart(10)}   ${fmt(p.roundMs, 1).padStart(8)} ` +
        `  ${fmt(p.ledgerBytesPerVolume / 1024, 1).padStart(17)}`),
  );
}
const exponent = slopeExponent(points);
const largest = points.filter((p) => p.holders === 10 && p.volumes === Math.max(...VOLUMES));
const evalP99 = Math.max(...largest.map((p) => p.volumeP99));
const ledgerPerVolume = points.find(
  (p) => p.holders === 10 && p.volumes === Math.max(...VOLUMES) && p.ranges === 100,
)!.ledgerBytesPerVolume;
console.log(`slope exponent of round time vs holders×volumes×ranges: ${fmt(exponent)} (1.00 = linear)`);
console.log(
  `per-volume evaluation p99 at 10 holders × ${Math.max(...VOLUMES)} volumes (worst over ranges): ` +
    `${fmt(evalP99, 3)} ms`,
);
if (sink < 0) console.log(sink);

const lanes = await measureHolderLanes(quick ? [1, 100] : [1, 100, 1000]);
console.log("\none holder, many lanes (units of 4 KiB)");
console.log(
  "lanes   idle heap KiB/lane   idle buffers KiB/lane   all-active MB/s   one-lane MB/s (same bytes)   ratio",
);
for (const l of lanes.rows) {
  console.log(
    `${String(l.lanes).padStart(5)}   ${fmt(l.idleHeapBytesPerLane / 1024, 1).padStart(18)}   ` +
      (`${fmt(l.idleBufferBytesPerLane / 1024, 1).padStart(21)}   ${fmt(l.activeMBps, 1).padStart(15)}   ` +
        `${fmt(l.oneLaneMBps, 1).padStart(26)}   ${fmt(l.activeMBps / l.oneLaneMBps).padStart(5)}`),
  );
}
const most = lanes.rows[lanes.rows.length - 1]!;
if (json) {
  console.log(
    JSON.stringify({
      eval_ms_p99_10_holders_1000_volumes: quick ? null : Number(fmt(evalP99, 3)),
      eval_slope_exponent: Number(fmt(exponent, 3)),
      ledger_bytes_per_volume_10_holders_100_ranges: Math.round(ledgerPerVolume),
      holder_bytes_per_idle_lane: Math.round(most.idleHeapBytesPerLane + most.idleBufferBytesPerLane),
      holder_lanes_measured: most.lanes,
      holder_all_lanes_active_mbps: Number(fmt(most.activeMBps, 1)),
      holder_one_lane_same_bytes_mbps: Number(fmt(most.oneLaneMBps, 1)),
      points,
    }),
  );
}
