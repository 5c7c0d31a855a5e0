import type { RangeSet } from "../lanes/index.ts";
import { ControlFenceCode, ControlFenceError } from "./control-error.ts";
import type { ControlEventBody, ControlEventOf } from "./control-event.ts";

type ControlEventBodyOf<T extends ControlEventBody["type"]> = Extract<ControlEventBody, { type: T }>;

/**
 * Holds: ranges the network must keep whatever the contract alone would release — an operator's
 * point-in-time-recovery pin, or a recovery that is reading them (registered before it reads, ended
 * when it is done). They live in the control log, so every controller sees them after a restart,
 * and the fold itself refuses a release of held ranges: a hold is enforced even against a
 * controller that ignored it.
 */
export type HoldRecord = Omit<ControlEventBodyOf<"hold_ranges">, "type"> & {
  /** When it was placed (the event's `issuedAt`). */
  readonly placedAt: number;
};

export type Holds = Readonly<Record<string, HoldRecord>>;

function fail(code: ControlFenceCode, message: string, detail: Record<string, unknown>): never {
  throw new ControlFenceError(code, message, detail);
}

/** The holds after `e` (a duplicate id is refused). */
export function placeHold(holds: Holds, e: ControlEventOf<"hold_ranges"> & { readonly issuedAt: number }): Holds {
  if (holds[e.holdId] !== undefined)
    fail(ControlFenceCode.duplicate_id, `hold ${e.holdId} already exists`, { holdId: e.holdId });
  if (e.ranges.isEmpty) fail(ControlFenceCode.malformed, `hold ${e.holdId} holds no ranges`, { holdId: e.holdId });
  const { holdId, kind, volume, lane, ranges, holders, untilMs, by } = e;
  return { ...holds, [holdId]: { holdId, kind, volume, lane, ranges, holders, untilMs, by, placedAt: e.issuedAt } };
}

/** The holds without `holdId` (an unknown id is refused). */
export function endHold(holds: Holds, e: ControlEventOf<"end_hold">): Holds {
  if (holds[e.holdId] === undefined)
    fail(ControlFenceCode.unknown_hold, `hold ${e.holdId} does not exist`, { holdId: e.holdId });
  const { [e.holdId]: _ended, ...rest } = holds;
  return rest;
}

/** Holds that bind `holderId` on (volume, lane) and intersect `ranges`. */
export function holdsOn(holds: Holds, volume: string, lane: string, holderId: string, ranges: RangeSet): HoldRecord[] {
  return Object.values(holds).filter(
    (h) =>
      h.volume === volume &&
      h.lane === lane &&
      (h.holders.length === 0 || h.holders.includes(holderId)) &&
      h.ranges.intersects(ranges),
  );
}

/** Throws ControlFenceError `range_held` when a hold binds the release of `ranges` by `holderId`. */
export function checkNotHeld(holds: Holds, volume: string, lane: string, holderId: string, ranges: RangeSet): void {
  const held = holdsOn(holds, volume, lane, holderId, ranges);
  if (held.length === 0) return;
  const h = held[0]!;
  fail(
    ControlFenceCode.range_held,
    `${holderId} may not release ${h.ranges.intersect(ranges).toString()} of ${volume}/${lane}: held by ${h.kind} ` +
      `${h.holdId} (${h.by})`,
    { holderId, holdId: h.holdId, kind: h.kind },
  );
}

/** Holds on `volume` whose `untilMs` has passed at `now` (0 means no end): the controller ends them. Pure. */
export function overdueHolds(holds: Holds, volume: string, now: number): HoldRecord[] {
  return Object.values(holds).filter((h) => h.volume === volume && h.untilMs !== 0 && h.untilMs <= now);
}

/** Why an overdue hold ends, for the log. */
export function overdueReason(h: HoldRecord): string {
  return `${h.kind} ${h.holdId} ran past its end (${new Date(h.untilMs).toISOString()})`;
}
