import { fromPromise, setup } from "xstate";
import { Arena, type ArenaReport } from "../arena/index.ts";
import { SegmentStateError } from "../arena/index.ts";
import { decodeSegment } from "../arena/index.ts";
import { PinReason } from "../arena/index.ts";
import { systemClock, type Clock } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";
import type { FileLayer } from "../core/index.ts";
import { LaneLog, UnitVerdict } from "../lanes/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { laneKey, validateTransportUnit, type TransportUnit } from "../lanes/index.ts";
import { LaneArenaSpill, type SpillOutcome } from "./lane-arena-spill.ts";
import type { LaneArenaEmitted, LaneArenaEvent, LaneArenaInput, LaneLogView, LaneSummary, UnitVerdictEmitted } from "./lane-arena-events.ts";

export type { LaneArenaInput, LaneSummary, LaneArenaView, LaneLogView, LaneArenaEvent, LaneArenaEmitted } from "./lane-arena-events.ts";

/** Snapshot context: the report is bytes by residency, pins by reason, outstanding credits. */
export interface LaneArenaContext {
  readonly arena: Arena;
  readonly spiller: LaneArenaSpill | undefined;
  readonly acquire: ((bytes: number) => Promise<boolean>) | undefined;
  readonly flushDeadlineMs: number;
  readonly logs: Map<string, LaneLog>;
  readonly summaries: boolean;
  readonly sealTimers: boolean;
  /** With `summaries` off: the report at start (read `arena` instead). */
  report: ArenaReport;
  lanes: Record<string, LaneSummary>;
  spillQueue: number[];
  spillInFlight: number[];
  flushDeadlineMisses: number;
  growthRefused: boolean;
}

/** The acceptance log of one lane of this actor, if it has one (read-only for the actor's owner). */
export function laneLogOf(context: LaneArenaContext, volume: string, lane: string): LaneLogView | undefined {
  return context.logs.get(laneKey(volume, lane));
}

function summarize(log: LaneLog): LaneSummary {
  return { term: log.term, retained: log.retained.toJSON(), contiguousThrough: log.contiguousThrough(), holes: log.holes().toJSON() };
}

function laneLog(ctx: LaneArenaContext, volume: string, lane: string): LaneLog {
  const key = laneKey(volume, lane);
  let log = ctx.logs.get(key);
  if (!log) {
    log = new LaneLog(volume, lane);
    ctx.logs.set(key, log);
  }
  return log;
}

/**
 * Runs `fn`; a CustodyError becomes a failed result. `count` is false around Arena calls, which
 * count their own refusals; true around validation and lane-log checks (digest, term, overlap).
 */
function attempt<T>(ctx: LaneArenaContext, count: boolean, fn: () => T): { ok: true; value: T } | { ok: false; error: CustodyError } {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    if (!(err instanceof CustodyError)) throw err;
    if (count) ctx.arena.counters.inc(err.code);
    return { ok: false, error: err };
  }
}

/**
 * Validates `u` and classifies it against its lane's log (a new log for a lane not seen yet) before
 * anything changes. A refusal is counted; an unexpected failure of a malformed unit is an
 * `invalid_unit` refusal, not a crash. No closure per unit: the admit loop runs it for every unit.
 */
function classifyUnit(ctx: LaneArenaContext, u: TransportUnit): { ok: true; value: { log: LaneLog; verdict: UnitVerdict } } | { ok: false; error: CustodyError } {
  try {
    const v = validateTransportUnit(u);
    const log = ctx.logs.get(laneKey(v.volume, v.lane)) ?? new LaneLog(v.volume, v.lane);
    return { ok: true, value: { log, verdict: log.classify(v) } };
  } catch (err) {
    const error = err instanceof CustodyError ? err : new CustodyError("invalid_unit", "unit could not be checked", { cause: String(err) });
    ctx.arena.counters.inc(error.code);
    return { ok: false, error };
  }
}

/** Appends `u` to the arena; its refusal (counted by the arena) is a failed result. */
function storeUnit(ctx: LaneArenaContext, u: TransportUnit, attestation: string | undefined): { ok: true; value: ReturnType<Arena["append"]> } | { ok: false; error: CustodyError } {
  try {
    return { ok: true, value: ctx.arena.append(u, attestation) };
  } catch (err) {
    if (!(err instanceof CustodyError)) throw err;
    return { ok: false, error: err };
  }
}

const base = setup({
  types: {
    context: {} as LaneArenaContext,
    events: {} as LaneArenaEvent,
    input: {} as LaneArenaInput,
    emitted: {} as LaneArenaEmitted,
  },
  actors: {
    /** Writes a batch to the spill stream and flushes it against the deadline. */
    flushSpill: fromPromise<SpillOutcome, { spiller: LaneArenaSpill; segmentIds: number[]; deadlineMs: number }>(({ input }) =>
      input.spiller.spill(input.segmentIds, input.deadlineMs),
    ),
    /** Asks the capacity source for the next increment. */
    acquireIncrement: fromPromise<boolean, { acquire: (bytes: number) => Promise<boolean>; bytes: number }>(({ input }) =>
      input.acquire(input.bytes),
    ),
  },
  guards: {
    spillQueued: ({ context }) => context.spiller !== undefined && context.spillQueue.length > 0,
    shouldGrow: ({ context }) => context.acquire !== undefined && !context.growthRefused && context.arena.wantsIncrement(),
  },
  delays: {
    maxOpenDelay: ({ context }) => context.arena.config.maxOpenDelayMs,
  },
});

const reject = (request: LaneArenaEvent["type"], error: CustodyError, stage: "check" | "arena" = "arena"): Extract<LaneArenaEmitted, { type: "rejected" }> => ({
  type: "rejected",
  request,
  code: error.code,
  message: error.message,
  stage,
});

/**
 * One unit's verdict: into the frame's list (`admitMany`), or emitted at once (`admit`). A module
 * function, not a closure per event: the transpiler names every closure it creates, per call.
 */
function answerUnit(verdicts: UnitVerdictEmitted[] | undefined, enqueue: { emit(e: UnitVerdictEmitted): void }, e: UnitVerdictEmitted): void {
  if (verdicts) verdicts.push(e);
  else enqueue.emit(e);
}

const withActions = base.extend({
  actions: {
    /** Validate → classify (term, overlap, duplicate) → copy into the arena within credits → accept. */
    admit: base.enqueueActions(({ context, event, enqueue }) => {
      // One unit, or a frame's units in order (one event per frame keeps the actor off the per-unit path).
      const units = event.type === "admit" ? [event] : event.type === "admitMany" ? event.units : [];
      const forwardPins = event.type === "admit" || event.type === "admitMany" ? (event.forwardPins ?? 0) : 0;
      let lanes = context.lanes;
      // A frame's verdicts go out as one emitted event: an emit per unit cost as much as the event did.
      const verdicts: UnitVerdictEmitted[] | undefined = event.type === "admitMany" ? [] : undefined;
      for (const { unit: u, attestation } of units) {
        const check = classifyUnit(context, u);
        if (!check.ok) {
          answerUnit(verdicts, enqueue, reject("admit", check.error, "check"));
          continue;
        }
        const { log, verdict } = check.value;
        const stored = verdict === UnitVerdict.duplicate ? undefined : storeUnit(context, u, attestation);
        if (stored && !stored.ok) {
          answerUnit(verdicts, enqueue, reject("admit", stored.error));
          continue;
        }
        const append = stored?.value;
        context.logs.set(laneKey(log.volume, log.lane), log);
        // Without summaries the progress report (contiguous prefix, holes) is not computed per unit.
        const progress = context.summaries ? log.accept(u) : undefined;
        if (!progress) log.record(u);
        if (append?.opened) for (let i = 0; i < forwardPins; i++) context.arena.pin(append.segmentId, PinReason.in_flight_forward);
        if (append?.sealedFull !== undefined) {
          enqueue.cancel(`seal-${append.sealedFull}`);
          enqueue.emit({ type: "sealed", segmentId: append.sealedFull, full: true });
        }
        if (append?.opened && context.sealTimers) {
          enqueue.raise({ type: "sealDue", segmentId: append.segmentId, volume: u.volume, lane: u.lane }, { delay: "maxOpenDelay", id: `seal-${append.segmentId}` });
        }
        if (context.summaries) {
          lanes = { ...lanes, [laneKey(u.volume, u.lane)]: summarize(log) };
          enqueue.assign({ report: context.arena.report(), lanes });
        }
        answerUnit(verdicts, enqueue, {
          type: "admitted",
          volume: u.volume,
          lane: u.lane,
          firstSeq: u.firstSeq,
          lastSeq: u.lastSeq,
          verdict: progress?.verdict ?? verdict,
          segmentId: append?.segmentId,
          opened: append?.opened ?? false,
          ...(progress ? { contiguousThrough: progress.contiguousThrough, holes: progress.holes.toJSON() } : {}),
        });
      }
      if (verdicts) enqueue.emit({ type: "admittedMany", verdicts });
    }),
    /** An explicit seal, or the max-open-delay timer of the segment still open. */
    seal: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "seal" && event.type !== "sealDue") return;
      const open = context.arena.openSegmentOf(event.volume, event.lane);
      if (open === undefined || (event.type === "sealDue" && open !== event.segmentId)) return;
      const r = context.arena.seal(event.volume, event.lane);
      if (r.deferred) {
        enqueue.emit({ type: "sealDeferred", segmentId: open });
        if (context.sealTimers) enqueue.raise({ type: "sealDue", segmentId: open, volume: event.volume, lane: event.lane }, { delay: "maxOpenDelay", id: `seal-${open}` });
      } else {
        if (context.sealTimers) enqueue.cancel(`seal-${open}`);
        enqueue.emit({ type: "sealed", segmentId: open, full: false });
      }
      if (context.summaries) enqueue.assign({ report: context.arena.report() });
    }),
    pin: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "pin") return;
      const r = attempt(context, false, () => context.arena.pin(event.segmentId, event.reason));
      if (!r.ok) return enqueue.emit(reject("pin", r.error));
      if (context.summaries) enqueue.assign({ report: context.arena.report() });
    }),
    unpin: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "unpin") return;
      const r = attempt(context, false, () => context.arena.unpin(event.segmentId, event.reason));
      if (!r.ok) return enqueue.emit(reject("unpin", r.error));
      if (r.value) enqueue.emit({ type: "recycled", segmentId: event.segmentId });
      if (context.summaries) enqueue.assign({ report: context.arena.report() });
    }),
    grant: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "grant") return;
      const r = attempt(context, false, () => {
        if (event.secure && context.arena.wantsIncrement()) context.arena.secureIncrement();
        return context.arena.grant(event.volume, event.lane, event.bytes);
      });
      if (!r.ok) return enqueue.emit(reject("grant", r.error));
      enqueue.emit({ type: "granted", volume: event.volume, lane: event.lane, requested: event.bytes, granted: r.value });
      if (context.summaries) enqueue.assign({ report: context.arena.report() });
    }),
    revoke: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "revoke") return;
      const bytes = context.arena.revoke(event.volume, event.lane);
      enqueue.emit({ type: "revoked", volume: event.volume, lane: event.lane, bytes });
      if (context.summaries) enqueue.assign({ report: context.arena.report() });
    }),
    /** Discard: obligations for these ranges ended; whole segments recycle with no disk I/O. */
    release: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "release") return;
      const parsed = attempt(context, true, () => RangeSet.fromJSON(event.ranges));
      if (!parsed.ok) return enqueue.emit(reject("release", parsed.error, "check"));
      const r = attempt(context, false, () => {
        const ended = context.arena.release(event.volume, event.lane, parsed.value);
        const log = laneLog(context, event.volume, event.lane);
        log.release(parsed.value);
        return { log, ended };
      });
      if (!r.ok) return enqueue.emit(reject("release", r.error));
      enqueue.emit({ type: "released", volume: event.volume, lane: event.lane, segmentIds: r.value.ended });
      if (context.summaries) enqueue.assign({ report: context.arena.report(), lanes: { ...context.lanes, [laneKey(event.volume, event.lane)]: summarize(r.value.log) } });
    }),
    /** Queues segments to spill (explicit ids, or the oldest candidates until RAM is under target). */
    queueSpill: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "spill" && event.type !== "pressure") return;
      if (!context.spiller) {
        const err = new SegmentStateError("this arena has no spill target (RAM-only holder)", {});
        context.arena.counters.inc("no_spill_target");
        return enqueue.emit({ type: "rejected", request: event.type, code: "no_spill_target", message: err.message, stage: "check" });
      }
      const busy = new Set([...context.spillQueue, ...context.spillInFlight]);
      let ids: number[];
      if (event.type === "spill" && event.segmentIds) ids = event.segmentIds.filter((id) => !busy.has(id));
      else {
        const target = event.type === "pressure" ? (event.targetRamBytes ?? 0) : 0;
        let ram = context.arena.report().ramBytes - busy.size * context.arena.config.segmentBytes;
        ids = [];
        for (const id of context.arena.spillCandidates()) {
          if (ram <= target) break;
          if (busy.has(id)) continue;
          ids.push(id);
          ram -= context.arena.config.segmentBytes;
        }
      }
      enqueue.assign({ spillQueue: [...context.spillQueue, ...ids] });
    }),
    takeSpillBatch: base.assign(({ context }) => ({ spillInFlight: context.spillQueue, spillQueue: [] })),
    applySpill: base.enqueueActions(({ context, event, enqueue }) => {
      const outcome = (event as unknown as { output: SpillOutcome }).output;
      if (outcome.kind === "spilled") enqueue.emit({ type: "spilled", segmentIds: outcome.segmentIds });
      else enqueue.emit({ type: "flushDeadlineMissed", segmentIds: outcome.segmentIds, deadlineMs: outcome.deadlineMs });
      enqueue.assign({
        spillInFlight: [],
        flushDeadlineMisses: context.flushDeadlineMisses + (outcome.kind === "deadline_missed" ? 1 : 0),
        report: context.arena.report(),
      });
    }),
    spillFailed: base.enqueueActions(({ context, event, enqueue }) => {
      context.arena.counters.inc("spill_failed");
      enqueue.emit({ type: "spillFailed", message: String((event as unknown as { error: unknown }).error) });
      enqueue.assign({ spillInFlight: [], report: context.arena.report() });
    }),
    /** The owner's spill stream synced a segment in time: custody continues at disk residency. */
    recordSpill: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "recordSpill") return;
      if (!context.arena.markSpilled(event.segmentId, event.evidence)) return;
      enqueue.emit({ type: "spilled", segmentIds: [event.segmentId] });
      if (context.summaries) enqueue.assign({ report: context.arena.report() });
    }),
    /** Export form of a sealed RAM segment, for custody transfer to another holder. */
    exportSegment: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "export") return;
      const r = attempt(context, false, () => context.arena.exportSegment(event.segmentId));
      if (!r.ok) return enqueue.emit(reject("export", r.error));
      enqueue.emit({ type: "exported", segmentId: event.segmentId, bytes: r.value });
    }),
    /** Takes custody of another holder's exported segment (validated whole before any change). */
    importSegment: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "import") return;
      // Check every unit against the lane log first (stale term, overlap): all or nothing.
      const checked = attempt(context, true, () => {
        const d = decodeSegment(event.bytes);
        const log = context.logs.get(laneKey(d.volume, d.lane)) ?? new LaneLog(d.volume, d.lane);
        for (const u of d.units) log.classify(u);
        return log;
      });
      if (!checked.ok) return enqueue.emit(reject("import", checked.error, "check"));
      const r = attempt(context, false, () => context.arena.importSegment(event.bytes));
      if (!r.ok) return enqueue.emit(reject("import", r.error));
      const log = checked.value;
      context.logs.set(laneKey(log.volume, log.lane), log);
      for (const u of context.arena.units(r.value.segmentId)) log.record(u);
      // Found on disk at start: custody continues there, using no RAM.
      if (event.evidence !== undefined) context.arena.markSpilled(r.value.segmentId, event.evidence);
      enqueue.emit({ type: "imported", segmentId: r.value.segmentId, volume: r.value.volume, lane: r.value.lane, seqs: r.value.seqs.toJSON() });
      if (context.summaries) enqueue.assign({ report: context.arena.report(), lanes: { ...context.lanes, [laneKey(r.value.volume, r.value.lane)]: summarize(log) } });
    }),
    secureIncrement: base.enqueueActions(({ context, event, enqueue }) => {
      const granted = (event as unknown as { output: boolean }).output;
      if (granted === true && context.arena.capacityBytes < context.arena.config.hardLimitBytes) {
        const capacityBytes = context.arena.secureIncrement();
        enqueue.emit({ type: "grown", capacityBytes });
        enqueue.assign({ report: context.arena.report() });
      } else {
        enqueue.emit({ type: "growthRefused", capacityBytes: context.arena.capacityBytes });
        enqueue.assign({ growthRefused: true });
      }
    }),
    growthFailed: base.enqueueActions(({ context, enqueue }) => {
      enqueue.emit({ type: "growthRefused", capacityBytes: context.arena.capacityBytes });
      enqueue.assign({ growthRefused: true });
    }),
    clearGrowthRefusal: base.assign({ growthRefused: false }),
  },
});

/** The arena's state from its input: the arena, its lane logs and the spill and growth bookkeeping. */
const laneArenaContext = ({ input }: { input: LaneArenaInput }): LaneArenaContext => {
  const clock = input.clock ?? systemClock;
  const arena = input.arena ?? new Arena(input.config ?? {}, clock, input.counters);
  const logs = new Map<string, LaneLog>();
  for (const l of input.lanes ?? []) logs.set(laneKey(l.volume, l.lane), new LaneLog(l.volume, l.lane));
  return {
    arena,
    spiller: input.spill ? new LaneArenaSpill(arena, input.spill.files, input.spill.path, clock) : undefined,
    acquire: input.acquireIncrement,
    flushDeadlineMs: input.flushDeadlineMs ?? 200,
    logs,
    summaries: input.summaries ?? true,
    sealTimers: input.sealTimers ?? true,
    report: arena.report(),
    lanes: {},
    spillQueue: [],
    spillInFlight: [],
    flushDeadlineMisses: 0,
    growthRefused: false,
  };
};

/** Ingress, handled in order whatever the spill and growth regions are doing. */
const laneArenaIngress = {
  admit: { actions: "admit" },
  admitMany: { actions: "admit" },
  seal: { actions: "seal" },
  sealDue: { actions: "seal" },
  pin: { actions: "pin" },
  unpin: { actions: "unpin" },
  grant: { actions: "grant" },
  revoke: { actions: "revoke" },
  release: { actions: "release" },
  export: { actions: "exportSegment" },
  import: { actions: "importSegment" },
  recordSpill: { actions: "recordSpill" },
} as const;

/**
 * The LaneArena actor: owns one arena's lifecycle. Ingress (admit, grant, seal, pin, release,
 * export/import) is handled in order on one region; spilling (write + deadline-bounded flush) and
 * capacity growth run as invoked promises in two parallel regions so admission never waits on disk.
 * Every refusal is a typed `rejected` emission, counted in `context.arena.counters`, with no state
 * change. Seal delays use the actor's clock (`createActor(machine, { clock, input })`). Every holder
 * lane runs one — the ingress-only twin below, since a holder spills and secures capacity itself —
 * as a child of the holder actor (holder-lane.ts), which sends it every change to the lane's
 * segments, credits, pins and log and reads the answer from what it emits within that send.
 */
export const laneArenaMachine = withActions.createMachine({
  id: "laneArena",
  type: "parallel",
  context: laneArenaContext,
  on: laneArenaIngress,
  states: {
    spill: {
      initial: "idle",
      states: {
        idle: {
          always: { guard: "spillQueued", target: "flushing" },
          on: { spill: { actions: "queueSpill" }, pressure: { actions: "queueSpill" } },
        },
        flushing: {
          entry: "takeSpillBatch",
          on: { spill: { actions: "queueSpill" }, pressure: { actions: "queueSpill" } },
          invoke: {
            src: "flushSpill",
            input: ({ context }) => ({ spiller: context.spiller!, segmentIds: context.spillInFlight, deadlineMs: context.flushDeadlineMs }),
            onDone: { target: "idle", actions: "applySpill" },
            onError: { target: "idle", actions: "spillFailed" },
          },
        },
      },
    },
    growth: {
      initial: "idle",
      states: {
        idle: {
          always: { guard: "shouldGrow", target: "acquiring" },
          on: { grow: { actions: "clearGrowthRefusal" } },
        },
        acquiring: {
          invoke: {
            src: "acquireIncrement",
            input: ({ context }) => ({ acquire: context.acquire!, bytes: context.arena.config.incrementBytes }),
            onDone: { target: "idle", actions: "secureIncrement" },
            onError: { target: "idle", actions: "growthFailed" },
          },
        },
      },
    },
  },
});

/**
 * The same actor without the spill and growth regions, for an owner that spills through its own
 * spill stream (`recordSpill`) and secures capacity with each grant (`secure: true`): a holder
 * lane. With nothing to run beside ingress, an event costs one atomic transition instead of a
 * walk over two idle parallel regions and their eventless checks.
 */
export const laneArenaIngressMachine = withActions.createMachine({
  id: "laneArena",
  context: laneArenaContext,
  on: laneArenaIngress,
});
