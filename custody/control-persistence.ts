import { laneKey } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { ControlFenceCode, ControlFenceError } from "./control-error.ts";
import type { ControlEventOf } from "./control-event.ts";

/**
 * Persistence targets: which holders of a lane persist its segments. The controller chooses
 * enough of them that every required scenario keeps a persisted copy; the lane's other
 * disk-capable holders then keep it in RAM only, where a release frees it without any write.
 * Without a choice every disk-capable holder flushes as its own flush policy says.
 */
export interface PersistenceChoice {
  readonly volume: string;
  readonly lane: string;
  /**
   * The targets apply to sequences from here on. Below it any disk-capable holder may flush: a
   * change of targets never leaves sequences already in flight without a holder that persists them.
   */
  readonly fromSeq: number;
  /** Sorted holder ids. */
  readonly targets: readonly string[];
  /** The scenarios the choice keeps a persisted copy for (reported; the fold does not read them). */
  readonly scenarios: readonly string[];
  /** When it was committed (the event's `issuedAt`). */
  readonly chosenAt: number;
}

/** Choices by lane key (`laneKey`): the newest per lane. */
export type PersistenceChoices = Readonly<Record<string, PersistenceChoice>>;

function fail(code: ControlFenceCode, message: string, detail: Record<string, unknown>): never {
  throw new ControlFenceError(code, message, detail);
}

/**
 * The choices after `e`. The caller has checked the lane has an obligation (`unknown_obligation`
 * otherwise). Every target must be admitted (`unknown_holder`), active (`holder_not_active`) and
 * named once (`malformed`). Empty targets withdraw the lane's choice. Pure.
 */
export function choosePersistence(
  choices: PersistenceChoices,
  holders: Readonly<Record<string, { readonly status: string }>>,
  e: ControlEventOf<"choose_persistence"> & { readonly issuedAt: number },
): PersistenceChoices {
  const key = laneKey(e.volume, e.lane);
  if (new Set(e.targets).size !== e.targets.length)
    fail(ControlFenceCode.malformed, `persistence targets of ${key} name a holder twice`, {
      volume: e.volume,
      lane: e.lane,
    });
  for (const id of e.targets) {
    const h = holders[id];
    if (h === undefined)
      fail(ControlFenceCode.unknown_holder, `persistence target ${id} was never admitted`, { holderId: id });
    if (h.status !== "active")
      fail(ControlFenceCode.holder_not_active, `persistence target ${id} is ${h.status}`, {
        holderId: id,
        status: h.status,
      });
  }
  if (e.targets.length === 0) {
    const { [key]: _withdrawn, ...rest } = choices;
    return rest;
  }
  const { volume, lane, fromSeq, targets, scenarios } = e;
  return {
    ...choices,
    [key]: { volume, lane, fromSeq, targets: [...targets].sort(), scenarios: [...scenarios], chosenAt: e.issuedAt },
  };
}

/** The lane's current choice, if any. */
export function persistenceChoiceOf(
  choices: PersistenceChoices | undefined,
  volume: string,
  lane: string,
): PersistenceChoice | undefined {
  return choices?.[laneKey(volume, lane)];
}

/**
 * The part of `seqs` that `holderId` may persist: all of it without a choice or at a target;
 * otherwise only what lies below the choice's `fromSeq`.
 */
export function flushableAt(
  choices: PersistenceChoices | undefined,
  holderId: string,
  volume: string,
  lane: string,
  seqs: RangeSet,
): RangeSet {
  const c = persistenceChoiceOf(choices, volume, lane);
  if (c === undefined || c.targets.includes(holderId)) return seqs;
  return c.fromSeq > 0 ? seqs.intersect(RangeSet.of(0, c.fromSeq - 1)) : RangeSet.EMPTY;
}
