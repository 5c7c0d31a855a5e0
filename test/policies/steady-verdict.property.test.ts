/**
 * The steady verdict (policies/steady-verdict.ts) over simulated time: a writer commits writes, a
 * holder at another host receipts each one some delay later, and the controller evaluates at
 * arbitrary instants, carrying the verdict memory from one evaluation to the next. The scenario
 * (the writer's host crashing) allows no acknowledged write lost.
 */
import test from "ava";
import fc from "fast-check";
import { RangeSet } from "../../lanes/range-set.ts";
import { evaluateState, steadyVerdicts, type EvaluationState, type VerdictMemory, type VerdictTiming } from "../../policies/index.ts";

const TIMING: VerdictTiming = { receiptDeadlineMs: 2_000, graceMs: 1_500 };
const SITES = [
  { id: "s-w", region: "east", az: "east-a", host: "w-host", deps: [] },
  { id: "s-h", region: "west", az: "west-a", host: "h-host", deps: [] },
];

/** One write: committed at `at`, receipted `delay` ms later (never, when null). */
interface Write {
  readonly at: number;
  readonly delay: number | null;
}

/** The evaluation input at `now`: what was committed by then, and what the holder had receipted. */
function stateAt(writes: readonly Write[], now: number): EvaluationState {
  const committed = writes.map((w, i) => ({ ...w, seq: i + 1 })).filter((w) => w.at <= now);
  let held = RangeSet.EMPTY;
  for (const w of committed) if (w.delay !== null && w.at + w.delay <= now) held = held.add(w.seq);
  return {
    volume: "v",
    asOfMs: now,
    staleAfterMs: 60_000,
    source: { site: "s-w", lanes: { l0: committed.length } },
    commits: committed.map((w) => ({ lane: "l0", first: w.seq, last: w.seq, committedAtMs: w.at, bytesPerSeq: 4096 })),
    sites: SITES,
    holders: [{ id: "h", site: "s-h", claims: held.isEmpty ? [] : [{ lane: "l0", ranges: held, residency: "disk", evidence: { kind: "observed", atMs: now } }] }],
    bases: [{ id: "genesis", holder: "h", cut: { l0: 0 }, bytes: 0 }],
    manifests: [],
    keyAuthorities: [{ id: "k", site: "s-h" }],
    links: [{ id: "w-h", from: "s-w", to: "s-h", bandwidthBytesPerSec: 1e8, deps: [] }],
    recovery: { destination: "s-h", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
    forwards: [],
    pins: [],
    recoveries: [],
    scenarios: [{ name: "writer host crash", losses: [{ domain: "host:w-host", kind: "crash" }], deadlineSec: 600, required: true }],
    timelines: [],
  };
}

/** The steady verdicts (and split) of the evaluations at `times`, in order, memory carried along. */
function verdicts(writes: readonly Write[], times: readonly number[]) {
  let memory: VerdictMemory = {};
  return times.map((now) => {
    const state = stateAt(writes, now);
    const r = steadyVerdicts(state, evaluateState(state), TIMING, memory);
    memory = r.memory;
    return { now, ...r.reports[0]! };
  });
}

/** Commit times from gaps (ms), each write with a delay drawn by `delay`. */
const writesArb = (delay: fc.Arbitrary<number>) => fc.array(fc.tuple(fc.integer({ min: 0, max: 400 }), delay), { minLength: 1, maxLength: 40 }).map((ws) => {
  let t = 0;
  return ws.map(([gap, d]) => ({ at: (t += gap), delay: d }));
});
const timesArb = fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 60 }).map((ts) => [...ts].sort((a, b) => a - b));

test("a write receipted within its deadline never turns the verdict, however the evaluations fall", (t) => {
  fc.assert(
    fc.property(writesArb(fc.integer({ min: 0, max: TIMING.receiptDeadlineMs })), timesArb, (writes, times) => {
      for (const v of verdicts(writes, times)) {
        if (v.verdict !== "met" || v.overdueSeqs !== 0) return false;
        if (v.inFlightSeqs !== v.lostSeqs) return false; // everything it would lose is in flight
      }
      return true;
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test("a write past its deadline for less than the grace never turns the verdict (one write awaited at a time)", (t) => {
  // Each write is committed only after the previous one was receipted: a loss never passes from
  // one write to the next, so every excess lasts less than the grace.
  const arb = fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: TIMING.receiptDeadlineMs + TIMING.graceMs - 1 })), { minLength: 1, maxLength: 20 }).map((ws) => {
    let t = 0;
    return ws.map(([gap, delay]) => {
      const w = { at: t + gap, delay };
      t = w.at + delay;
      return w;
    });
  });
  fc.assert(
    fc.property(arb, timesArb, (writes, times) => verdicts(writes, times).every((v) => v.verdict === "met")),
    { numRuns: 300 },
  );
  t.pass();
});

test("a write never receipted turns the verdict once it is past its deadline and the grace, and keeps it turned", (t) => {
  fc.assert(
    fc.property(writesArb(fc.integer({ min: 0, max: TIMING.receiptDeadlineMs })), fc.nat(39), timesArb, (writes, k, times) => {
      const lostAt = writes[k % writes.length]!.at;
      const ws = writes.map((w, i) => (i === k % writes.length ? { ...w, delay: null } : w));
      // Dense evaluations (every 100 ms, as a controller's), plus the arbitrary ones.
      const dense = [...new Set([...times, ...Array.from({ length: 250 }, (_, i) => i * 100)])].sort((a, b) => a - b);
      const overdueAt = lostAt + TIMING.receiptDeadlineMs;
      // The loss is first seen by the first evaluation at or after its deadline; the grace runs from there.
      const seen = dense.find((x) => x >= overdueAt)!;
      for (const v of verdicts(ws, dense)) {
        if ((v.verdict === "not_met") !== v.now >= seen + TIMING.graceMs) return false;
        if ((v.overdueSeqs >= 1) !== v.now >= overdueAt) return false;
        if (v.verdict === "not_met" && v.reasons[0] !== `loses ${v.overdueSeqs} acknowledged write${v.overdueSeqs === 1 ? "" : "s"}, 0 allowed`) return false;
      }
      return true;
    }),
    { numRuns: 100 },
  );
  t.pass();
});
