import type { Clock } from "../../core/index.ts";
import { HoldKind, type ControlEventBody } from "../../custody/index.ts";
import type { ControlState } from "../../custody/index.ts";
import type { RangeSet } from "../../lanes/index.ts";

/** Holds a reader placed in the control log; `end()` removes them (idempotent, never throws). */
export interface ReadHolds {
  readonly holdIds: readonly string[];
  end(reason: string): Promise<void>;
}

/**
 * Registers a read the controller itself makes (a repair copying from survivors) in the control
 * log: one `recovery` hold per lane with ranges, binding every holder (the read may come from any
 * survivor), ending at `untilMs` at the latest — a controller that dies mid-read leaves nothing
 * held for good: whichever controller runs next ends it then. Other controllers, and this one
 * after a restart, see what is being read.
 */
export async function holdReads(
  commit: (body: (s: ControlState) => ControlEventBody) => Promise<unknown>,
  clock: Clock,
  r: {
    readonly id: string;
    readonly volume: string;
    readonly ranges: Readonly<Record<string, RangeSet>>;
    readonly leaseMs: number;
    readonly by: string;
  },
): Promise<ReadHolds> {
  const holdIds: string[] = [];
  const untilMs = Math.floor(clock.now()) + r.leaseMs;
  for (const [lane, ranges] of Object.entries(r.ranges)) {
    if (ranges.isEmpty) continue;
    const holdId = `${r.id}-${lane}`;
    await commit(() => ({
      type: "hold_ranges",
      holdId,
      kind: HoldKind.recovery,
      volume: r.volume,
      lane,
      ranges,
      holders: [],
      untilMs,
      by: r.by,
    }));
    holdIds.push(holdId);
  }
  let ended: Promise<void> | undefined;
  return {
    holdIds,
    end: (reason) =>
      (ended ??= (async () => {
        for (const holdId of holdIds) {
          await commit((s) => {
            if (s.holds[holdId] === undefined) throw new Error(`hold ${holdId} already ended`);
            return { type: "end_hold", holdId, reason };
          }).catch(() => undefined);
        }
      })()),
  };
}
