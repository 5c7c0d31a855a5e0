import { randomBytes } from "node:crypto";
import { systemClock } from "../../core/index.ts";
import { commitControlEventRetrying, type ControllerIdentity, type ControlLogStore } from "../../custody/index.ts";
import { HoldKind } from "../../custody/index.ts";
import { ControlLogFollower } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { openJetStreamControlLog } from "../../transport/index.ts";
import { closeNats, connectNats } from "../../transport/index.ts";

/** A recovery's holds in the control log; `end()` removes them (idempotent). */
export interface RecoveryRegistration {
  readonly holdIds: readonly string[];
  end(): Promise<void>;
}

/** What a recovery is about to read. */
export interface RecoveryRead {
  readonly volume: string;
  readonly cut: Readonly<Record<string, number>>;
  readonly sources: readonly string[];
  readonly leaseMs: number;
  readonly by: string;
}

/**
 * Registers a recovery that is about to read `cut` of `volume` from `sources`: one `recovery` hold
 * per lane in `region`'s control log, committed before the first read. While they stand, no source
 * may release what the recovery reads — the controller's release rule counts them and the log's fold
 * refuses such a release outright. They end with `end()`, or, when the recovery dies, once `leaseMs`
 * has passed (the controller ends overdue holds).
 */
export async function registerRecovery(
  servers: string,
  region: string,
  r: RecoveryRead,
): Promise<RecoveryRegistration> {
  const nc = await connectNats({ servers, name: "custody-recovery-registration", maxReconnectAttempts: 0 });
  try {
    const store = await openJetStreamControlLog(nc, { region });
    const placed = await placeRecoveryHolds(
      store,
      new ControlLogFollower(store),
      { controller: "recovery", clock: systemClock },
      r,
    );
    return { holdIds: placed.holdIds, end: () => placed.end().finally(() => closeNats(nc)) };
  } catch (err) {
    await closeNats(nc);
    throw err;
  }
}

/**
 * The same holds, committed on a control log the caller has open, as `who` (the operator signs
 * them on a signed log). The caller closes the log after `end()`.
 */
export async function placeRecoveryHolds(
  store: ControlLogStore,
  follower: ControlLogFollower,
  who: ControllerIdentity,
  r: RecoveryRead,
): Promise<RecoveryRegistration> {
  const holdIds: string[] = [];
  const run = randomBytes(4).toString("hex");
  const untilMs = Math.floor(systemClock.now()) + r.leaseMs;
  for (const [lane, through] of Object.entries(r.cut)) {
    if (through < 1) continue;
    const holdId = `recover-${run}-${lane}`;
    await commitControlEventRetrying(store, follower, who, () => ({
      type: "hold_ranges",
      holdId,
      kind: HoldKind.recovery,
      volume: r.volume,
      lane,
      ranges: RangeSet.of(1, through),
      holders: [...r.sources],
      untilMs,
      by: r.by,
    }));
    holdIds.push(holdId);
  }
  let ended: Promise<void> | undefined;
  return {
    holdIds,
    end: () =>
      (ended ??= (async () => {
        for (const holdId of holdIds) {
          await commitControlEventRetrying(store, follower, who, (s) => {
            if (s.holds[holdId] === undefined) throw new Error(`hold ${holdId} was already ended`);
            return { type: "end_hold", holdId, reason: "recovery finished" };
          }).catch((err: unknown) => {
            if (!(err instanceof Error && err.message.endsWith("already ended"))) throw err;
          });
        }
      })()),
  };
}
