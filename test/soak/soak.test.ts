/**
 * The soak (#17) on real processes, short: the deployment comes up, writes flow, a rolling base is
 * built and the store releases below it, every figure the issue names is reported, and nothing is
 * left running. The long runs and their thresholds are `npm run soak` (no wall-clock limits here).
 */
import test from "ava";
import { linearSlope, percentile } from "../../tools/soak/soak-math.ts";
import { soakChecks } from "../../tools/soak/soak-checks.ts";
import { runSoak, type SoakResult } from "../../tools/soak/soak-run.ts";

test("percentile is nearest-rank and linearSlope is the least-squares slope", (t) => {
  t.is(percentile([], 0.99), 0);
  t.is(percentile([5, 1, 3, 2, 4], 0.5), 3);
  t.is(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 0.99), 99);
  t.is(linearSlope([[0, 1], [1, 3], [2, 5]]), 2);
  t.is(linearSlope([[1, 7]]), 0);
});

test("the store's disk slope: over a 30-minute soak once bases roll, read every second, a flat floor is never judged growing", (t) => {
  // A model of what the soak's store does at 1,000 writes/s: teeth of 20–32 s (one per base)
  // climbing 4 MB/s from a floor of 4–36 MB, the floor flat over the run. Each world is read from
  // a random phase, over 15 minutes (a second half) or 27 (once bases roll), every 10 s or 1 s.
  const worlds = 200;
  const rng = mulberry32(45);
  const judgedGrowing = (minutes: number, step: number, tilt = 0) => {
    let n = 0;
    for (let w = 0; w < worlds; w++) {
      const teeth: { start: number; floor: number }[] = [];
      for (let s = 0; s < minutes * 60 + 60; s += 20 + 12 * rng()) teeth.push({ start: s, floor: 4 + 32 * rng() });
      const disk = (s: number) => {
        const tooth = teeth.findLast((x) => x.start <= s)!;
        return tooth.floor + (tilt * s) / 60 + 4 * (s - tooth.start);
      };
      const phase = 10 * rng();
      const points = Array.from({ length: (minutes * 60) / step }, (_, k): [number, number] => {
        const s = phase + k * step;
        return [s / 60, disk(s)];
      });
      if (Math.abs(linearSlope(points)) > 1) n++;
    }
    return n;
  };
  const half10 = judgedGrowing(15, 10);
  const half1 = judgedGrowing(15, 1);
  const rolling1 = judgedGrowing(27, 1);
  t.log(`flat floor judged growing: 15 min every 10 s ${half10}, every 1 s ${half1}; 27 min every 1 s ${rolling1} (of ${worlds})`);
  t.true(half10 > half1);
  t.is(rolling1, 0);
  // And a floor that does grow, by 2 MB/min, is caught in every world.
  t.is(judgedGrowing(27, 1, 2), worlds);
});

/** A small seeded generator (mulberry32), so the model's worlds are the same on every run. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
}

test("the soak's checks fail a growing process, a slowing evaluation and a growing store", (t) => {
  const good = { rate: 1000, rss_slope_mb_per_min_max: 0.4, eval_ms_p99_first_minute: 10, eval_ms_p99_last_minute: 11, store_disk_bytes_slope_mb_per_min: 0.2, custody_lag_max_seqs: 100, custody_lag_max_seqs_second_half: 90, bases: 3, releases: 40, leftover_processes: 0, control_log_bytes_slope_mb_per_min: 0.001, control_log_snapshots: 4, verdict_flaps: 0, verdict_documents: 1200, verdict_not_met_documents: 0 } as SoakResult;
  t.true(soakChecks(good).every((c) => c.ok));
  const failing = (edit: Partial<SoakResult>) => soakChecks({ ...good, ...edit }).filter((c) => !c.ok).map((c) => c.check);
  t.is(failing({ rss_slope_mb_per_min_max: 3 }).length, 1);
  t.is(failing({ eval_ms_p99_last_minute: 13 }).length, 1);
  t.is(failing({ store_disk_bytes_slope_mb_per_min: 5 }).length, 1);
  t.is(failing({ custody_lag_max_seqs: 5000, custody_lag_max_seqs_second_half: 5000 }).length, 1);
  t.is(failing({ bases: 0 }).length, 1);
  t.is(failing({ leftover_processes: 2 }).length, 1);
  t.is(failing({ control_log_bytes_slope_mb_per_min: 0.05 }).length, 1);
  t.is(failing({ control_log_snapshots: 0 }).length, 1);
  t.deepEqual(failing({ verdict_flaps: 1 }), ["no verdict flaps (no fault injected)"]);
});

test("a one-minute soak on real processes builds rolling bases, releases below them and leaves nothing running", async (t) => {
  // A base every 500 sequences: even a machine loaded to a tenth of the asked rate builds one in the minute.
  const r = await runSoak({ minutes: 1, rate: 100, sampleS: 10, baseEverySeqs: 500, log: (l) => t.log(l) });
  t.log(JSON.stringify({ ...r, per_minute: undefined }));
  t.true(r.writes > 500, `writes: ${r.writes}`);
  t.true(r.bases >= 1, `bases: ${r.bases}`);
  t.true(r.releases > 0, `releases: ${r.releases}`);
  t.is(r.per_minute.length, 1);
  t.is(r.process_restarts, 0);
  t.is(r.leftover_processes, 0);
  // No fault is injected: writes in flight never change a verdict (issue #47).
  t.true(r.verdict_documents > 0);
  t.is(r.verdict_flaps, 0);
  t.is(r.verdict_not_met_documents, 0, "every scenario is met all along: nothing is lost, the writes in flight are not");
  t.true(r.in_flight_seqs_max > 0, "writes were in flight");
  for (const k of ["minutes", "writes", "releases", "bases", "rss_slope_mb_per_min_max", "eval_ms_p99_first_minute", "eval_ms_p99_last_minute", "custody_lag_max_seqs", "retained_bytes_max", "store_disk_bytes_slope_mb_per_min", "control_log_bytes_slope_mb_per_min", "control_log_snapshots", "verdict_flaps", "in_flight_seqs_max", "overdue_seqs_max"]) t.true(k in r, `the result names ${k}`);
});
