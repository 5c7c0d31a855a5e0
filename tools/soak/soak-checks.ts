import type { SoakResult } from "./soak-run.ts";

/** The checks #17 asks of a soak. */
export function soakChecks(r: SoakResult): { check: string; value: string; ok: boolean }[] {
  return [
    {
      check: "worst RSS slope, second half ≤ 1 MB/min",
      value: `${r.rss_slope_mb_per_min_max} MB/min`,
      ok: r.rss_slope_mb_per_min_max <= 1,
    },
    {
      check: "eval p99 last minute ≤ 1.2 × first minute",
      value: `${r.eval_ms_p99_last_minute} vs ${r.eval_ms_p99_first_minute} ms`,
      ok: r.eval_ms_p99_last_minute <= 1.2 * r.eval_ms_p99_first_minute,
    },
    {
      check: "store disk flat once bases roll (slope ≤ 1 MB/min)",
      value: `${r.store_disk_bytes_slope_mb_per_min} MB/min`,
      ok: Math.abs(r.store_disk_bytes_slope_mb_per_min) <= 1,
    },
    {
      check: "custody lag bounded (second half ≤ first-half max or ≤ 2 s of writes)",
      value: `${r.custody_lag_max_seqs_second_half} / ${r.custody_lag_max_seqs} seqs`,
      ok:
        r.custody_lag_max_seqs_second_half <= Math.max(r.custody_lag_max_seqs, 2 * r.rate) &&
        r.custody_lag_max_seqs <= 2 * r.rate,
    },
    {
      check: "bases rolled and releases committed",
      value: `${r.bases} bases, ${r.releases} releases`,
      ok: r.bases > 0 && r.releases > 0,
    },
    {
      check: "control log bounded once compacted (slope after the first snapshot ≤ 0.005 MB/min)",
      value: `${r.control_log_bytes_slope_mb_per_min} MB/min, ${r.control_log_snapshots} snapshots`,
      ok: r.control_log_snapshots > 0 && r.control_log_bytes_slope_mb_per_min <= 0.005,
    },
    { check: "no process left behind", value: String(r.leftover_processes), ok: r.leftover_processes === 0 },
    {
      check: "no verdict flaps (no fault injected)",
      value:
        `${r.verdict_flaps} in ${r.verdict_documents} status documents ` +
        `(${r.verdict_not_met_documents} with a scenario not met)`,
      ok: r.verdict_flaps === 0,
    },
  ];
}
