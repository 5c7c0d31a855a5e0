import { randomBytes } from "node:crypto";
import type { Command } from "commander";
import { withOperatorLog } from "../operator-log.ts";
import { commitControlEventRetrying } from "../../custody/index.ts";
import { HoldKind } from "../../custody/index.ts";
import { InvalidRangeError, RangeSet } from "../../lanes/index.ts";
import { checkToken } from "../../transport/protocol/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import { CustodyCliError } from "../cli-error.ts";
import { operatorAccess, withOperatorKey, type OperatorKeyOptions } from "../operator-signing.ts";
import { withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";

interface ConnOptions extends OutputOptions, OperatorKeyOptions, OperatorConnectionOptions {
  region: string;
}

/** Parses `1-100,200-250` (or a single `7`) into ranges. */
export function parseRanges(v: string): RangeSet {
  try {
    const out = RangeSet.parse(v);
    if (!out.isEmpty) return out;
  } catch (err) {
    if (!(err instanceof InvalidRangeError)) throw err;
  }
  throw new CustodyCliError(`--ranges must look like 1-100[,200-250], got ${v}`, { option: "ranges" });
}

/** Parses `--until`: an ISO time or ms since the epoch; absent means no end (0). */
function parseUntil(v: string | undefined): number {
  if (v === undefined) return 0;
  const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new CustodyCliError(`--until must be an ISO time or ms since the epoch, got ${v}`, { option: "until" });
  return ms;
}

/**
 * `custody hold pin|end|list`: holds in a region's control log. A PITR pin keeps ranges in the
 * network whatever the contract alone would release (until `end`, or until `--until` when the
 * controller ends it); recoveries place their own holds (`custody recover --region`). The log's
 * fold refuses any release of held ranges, so a hold binds even a controller that ignored it.
 */
export function register(program: Command): void {
  const hold = program.command("hold").description("PITR pins and recovery holds in a region's control log");
  const conn = (c: Command) =>
    withOperatorKey(
      withOperatorConnection(c)
        .requiredOption("--region <region>", "control-log region")
        .option("--json", "one JSON object on one line"),
    );
  conn(hold.command("pin").description("Commit a PITR pin: no bound holder may release the ranges until the pin ends"))
    .requiredOption("--volume <volume>", "volume id")
    .requiredOption("--lane <lane>", "lane")
    .requiredOption("--ranges <a-b,...>", "sequences to keep, e.g. 1-5000")
    .option("--holders <h1,h2>", "holders the pin binds (default: every holder)")
    .option("--until <time>", "ISO time or ms since the epoch when the controller ends the pin (default: never)")
    .option("--id <id>", "hold id (default: pin-<random>)")
    .option("--by <who>", "who places it, for status and audit", "operator")
    .action(action(commitPin));
  conn(
    hold.command("end").description("Commit end_hold: the ranges may be released again when nothing else needs them"),
  )
    .requiredOption("--id <id>", "hold id")
    .option("--reason <text>", "why it ends", "ended by the operator")
    .action(
      action(async (o: ConnOptions & { id: string; reason: string }) => {
        const { seq } = await withOperatorLog(o, "custody-cli-hold", ({ store, follower }) =>
          commitControlEventRetrying(store, follower, operatorAccess(o).who, () => ({
            type: "end_hold",
            holdId: o.id,
            reason: o.reason,
          })),
        );
        const out = { ended: o.id, controlSeq: seq };
        printResult(o, out, [out]);
      }),
    );
  conn(hold.command("list").description("The holds the control log has now")).action(
    action(async (o: ConnOptions) => {
      const holds = await withOperatorLog(o, "custody-cli-hold", async ({ follower }) =>
        Object.values((await follower.refresh()).holds),
      );
      const rows = holds.map((h) => ({
        id: h.holdId,
        kind: h.kind,
        volume: h.volume,
        lane: h.lane,
        ranges: h.ranges.toString(),
        holders: h.holders.join(",") || "(all)",
        until: h.untilMs === 0 ? "-" : new Date(h.untilMs).toISOString(),
        by: h.by,
      }));
      printResult(o, { holds: rows }, rows, rows.length === 0 ? "no holds" : undefined);
    }),
  );
}

type PinOptions = ConnOptions & {
  volume: string;
  lane: string;
  ranges: string;
  holders?: string;
  until?: string;
  id?: string;
  by: string;
};

/** `custody hold pin`: checks the pin's arguments, commits `hold_ranges` as the operator, prints the hold. */
async function commitPin(o: PinOptions): Promise<void> {
  const holdId = checkToken(o.id ?? `pin-${randomBytes(4).toString("hex")}`, "hold id");
  const holders = (o.holders ?? "")
    .split(",")
    .filter((h) => h.length > 0)
    .map((h) => checkToken(h, "holder"));
  const ranges = parseRanges(o.ranges);
  const untilMs = parseUntil(o.until);
  const { seq } = await withOperatorLog(o, "custody-cli-hold", ({ store, follower }) =>
    commitControlEventRetrying(store, follower, operatorAccess(o).who, () => ({
      type: "hold_ranges",
      holdId,
      kind: HoldKind.pitr_pin,
      volume: checkToken(o.volume, "volume"),
      lane: checkToken(o.lane, "lane"),
      ranges,
      holders,
      untilMs,
      by: o.by,
    })),
  );
  const out = {
    holdId,
    kind: HoldKind.pitr_pin,
    volume: o.volume,
    lane: o.lane,
    ranges: ranges.toString(),
    holders,
    untilMs,
    controlSeq: seq,
  };
  printResult(o, out, [out]);
}
