#!/usr/bin/env -S npx tsx
/**
 * `npm run soak -- --minutes N [--rate W] [--sample-s S] [--compact-every-s C] [--json]`: the long run of #17 on real
 * processes (see soak-run.ts). Prints one row per minute as it completes, then the run's figures and
 * the checks; with `--json`, one JSON object on the last line. Exits 1 when a check fails.
 */
import { Command } from "commander";
import { failWith, formatTable } from "../../core/index.ts";
import { soakChecks } from "./soak-checks.ts";
import { runSoak, type SoakMinute } from "./soak-run.ts";

function minuteLine(r: SoakMinute): Record<string, unknown> {
  return {
    min: r.minute,
    "writes/s": r.writes_per_s,
    releases: r.releases,
    bases: r.bases,
    ...Object.fromEntries(Object.entries(r.rss_mb).map(([k, v]) => [`rss ${k} MB`, v])),
    "eval p99 ms": r.eval_ms_p99,
    "ctl loop p99 ms": r.ctl_loop_p99_ms,
    "lag max seqs": r.custody_lag_max_seqs,
    "retained MB max": r.retained_mb_max,
    "store disk MB": r.store_disk_mb,
    "control log MB": r.control_log_mb,
    "verdict flaps": r.verdict_flaps,
  };
}

const program = new Command("soak")
  .description("long run of the whole deployment on real processes, sampling memory, evaluation time, lag and disk")
  .option("--minutes <n>", "minutes of load", "20")
  .option("--rate <w>", "4 KiB writes per second (queue depth 8)", "1000")
  .option("--sample-s <s>", "seconds between samples (divides 60)", "10")
  .option("--compact-every-s <s>", "seconds between the operator's control-log compactions (0: never)", "15")
  .option("--json", "one JSON object on the last line")
  .action(async (o: { minutes: string; rate: string; sampleS: string; compactEveryS: string; json?: boolean }) => {
    try {
      const minutes = Number(o.minutes);
      const rate = Number(o.rate);
      const sampleS = Number(o.sampleS);
      if (!Number.isInteger(minutes) || minutes < 2 || minutes > 24 * 60)
        throw new Error(`--minutes must be an integer 2..1440, got ${o.minutes}`);
      if (!Number.isFinite(rate) || rate <= 0 || rate > 20_000)
        throw new Error(`--rate must be 1..20000, got ${o.rate}`);
      if (!Number.isInteger(sampleS) || sampleS < 1 || 60 % sampleS !== 0)
        throw new Error(`--sample-s must divide 60, got ${o.sampleS}`);
      const compactEveryS = Number(o.compactEveryS);
      if (!Number.isFinite(compactEveryS) || compactEveryS < 0)
        throw new Error(`--compact-every-s must be 0 or more, got ${o.compactEveryS}`);
      let header = false;
      const r = await runSoak({
        minutes,
        rate,
        sampleS,
        compactEveryS,
        log: (l) => process.stderr.write(l + "\n"),
        onMinute: (row) => {
          // One table row per minute; the header once.
          const lines = formatTable([minuteLine(row)]).split("\n");
          process.stdout.write((header ? lines.slice(-1) : lines).join("\n") + "\n");
          header = true;
        },
      });
      process.stdout.write(
        "\n" +
          formatTable(
            [{ ...r, per_minute: undefined, rss_slope_mb_per_min: undefined }].map((x) =>
              Object.fromEntries(Object.entries(x).filter(([, v]) => v !== undefined)),
            ),
          ) +
          "\n",
      );
      process.stdout.write(
        "RSS slope by process (MB/min, second half): " + JSON.stringify(r.rss_slope_mb_per_min) + "\n\n",
      );
      const checks = soakChecks(r);
      process.stdout.write(
        formatTable(checks.map((c) => ({ check: c.check, value: c.value, verdict: c.ok ? "ok" : "FAIL" }))) + "\n",
      );
      if (o.json) process.stdout.write(JSON.stringify(r) + "\n");
      if (checks.some((c) => !c.ok)) process.exitCode = 1;
    } catch (err) {
      failWith(err);
    }
  });

await program.parseAsync(process.argv);
