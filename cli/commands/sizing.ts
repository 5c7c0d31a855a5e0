import type { Command } from "commander";
import { z } from "zod";
import { memoryNeeded, parseWith, PolicyInputError, streamCost } from "../../policies/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import { readJsonFile } from "./policy.ts";

/** A number option in the unit its name states; a typed error naming the option otherwise. */
function amount(name: string, v: string | undefined, dflt?: number): number {
  if (v === undefined) {
    if (dflt === undefined) throw new PolicyInputError(name, "is required");
    return dflt;
  }
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || n < 0)
    throw new PolicyInputError(name, `must be a number >= 0, got ${JSON.stringify(v)}`);
  return n;
}

const pricedEdgesSchema = z.array(
  z.strictObject({
    from: z.string().min(1),
    to: z.string().min(1),
    charges: z.array(z.strictObject({ name: z.string().min(1), usdPerGB: z.number().nonnegative() })).min(1),
  }),
);

const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

/** Registers `custody size` (holder memory for one stream) and `custody cost` (per-leg transfer cost of a path). */
export function register(program: Command): void {
  program
    .command("size")
    .description(
      "memory a holder needs for one stream: retained rate × (retention + forwarding outage) + bursts + pins + credits",
    )
    .option("--bytes-per-sec <n>", "retained bytes per second")
    .option("--retention-sec <n>", "how long the holder retains what it received")
    .option("--outage-sec <n>", "a forwarding outage to absorb (its whole arrival piles up)", "0")
    .option("--burst-bytes <n>", "bursts above the steady rate", "0")
    .option("--pinned-bytes <n>", "ranges pinned (PITR, recoveries)", "0")
    .option("--credit-bytes <n>", "credit outstanding to senders", "0")
    .option("--json", "one JSON object on one line")
    .action(
      action(
        (
          o: OutputOptions & {
            bytesPerSec?: string;
            retentionSec?: string;
            outageSec: string;
            burstBytes: string;
            pinnedBytes: string;
            creditBytes: string;
          },
        ) => {
          const m = memoryNeeded({
            retainedBytesPerSec: amount("bytes-per-sec", o.bytesPerSec),
            retentionSec: amount("retention-sec", o.retentionSec),
            forwardingOutageSec: amount("outage-sec", o.outageSec),
            burstBytes: amount("burst-bytes", o.burstBytes),
            pinnedBytes: amount("pinned-bytes", o.pinnedBytes),
            creditBytes: amount("credit-bytes", o.creditBytes),
          });
          const rows = Object.entries(m).map(([part, bytes]) => ({ part, bytes, MiB: mib(bytes) }));
          printResult(o, m, rows, `memory needed: ${mib(m.totalBytes)} MiB (before headroom)`);
        },
      ),
    );
  program
    .command("cost")
    .description("transfer cost of a stream over a priced path: each charge on each edge is its own leg")
    .argument("<edges.json>", "[{from, to, charges: [{name, usdPerGB}]}]")
    .option("--bytes-per-sec <n>", "stream rate")
    .option("--days <n>", "billing period", "30")
    .option("--json", "one JSON object on one line")
    .action(
      action((path: string, o: OutputOptions & { bytesPerSec?: string; days: string }) => {
        const edges = parseWith(pricedEdgesSchema, readJsonFile(path));
        const days = amount("days", o.days);
        const r = streamCost(edges, amount("bytes-per-sec", o.bytesPerSec), days);
        const rows = r.legs.map((l) => ({
          from: l.from,
          to: l.to,
          charge: l.charge,
          "$/GB": l.usdPerGB,
          [`$ per ${days} days`]: l.usd.toFixed(2),
        }));
        printResult(
          o,
          r,
          rows,
          `total $${r.totalUsd.toFixed(2)} per ${days} days over ${r.legs.length} leg${r.legs.length === 1 ? "" : "s"}`,
        );
      }),
    );
}
