import { fromTransition, type ActorSystem } from "xstate";
import type { Arena } from "../../arena/index.ts";
import { decodeSegment } from "../../arena/index.ts";
import { PinReason } from "../../arena/index.ts";
import { CustodyError } from "../../core/index.ts";
import { LaneLog, UnitVerdict } from "../../lanes/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { laneKey, validateTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import { laneArenaContext, laneLog, summarize, type LaneArenaContext } from "./lane-arena-context.ts";
import type { LaneArenaEmitted, LaneArenaEvent, LaneArenaInput, UnitVerdictEmitted } from "./lane-arena-events.ts";

/**
 * What an ingress handler may do besides changing the arena and the lane logs: emit an answer,
 * (re)arm or cancel a segment's max-open-delay timer, and replace snapshot fields. The statechart
 * maps these to `enqueueActions`; the ingress-only actor emits through its actor scope.
 */
export interface IngressOut {
  emit(e: LaneArenaEmitted): void;
  sealDue(e: Extract<LaneArenaEvent, { type: "sealDue" }>): void;
  cancelSeal(segmentId: number): void;
  assign(patch: Partial<LaneArenaContext>): void;
}

/**
 * Runs `fn`; a CustodyError becomes a failed result. `count` is false around Arena calls, which
 * count their own refusals; true around validation and lane-log checks (digest, term, overlap).
 */
function attempt<T>(
  ctx: LaneArenaContext,
  count: boolean,
  fn: () => T,
): { ok: true; value: T } | { ok: false; error: CustodyError } {
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
function classifyUnit(
  ctx: LaneArenaContext,
  u: TransportUnit,
): { ok: true; log: LaneLog; fresh: boolean; verdict: UnitVerdict } | { ok: false; error: CustodyError } {
  try {
    const v = validateTransportUnit(u);
    const known = ctx.logs.get(laneKey(v.volume, v.lane));
    const log = known ?? new LaneLog(v.volume, v.lane);
    return { ok: true, log, fresh: known === undefined, verdict: log.classify(v) };
  } catch (err) {
    const error =
      err instanceof CustodyError
        ? err
        : new CustodyError("invalid_unit", "unit could not be checked", { cause: String(err) });
    ctx.arena.counters.inc(error.code);
    return { ok: false, error };
  }
}

/** Appends `u` to the arena: what the append did, or its refusal (counted by the arena). No wrapper object per unit. */
function storeUnit(
  ctx: LaneArenaContext,
  u: TransportUnit,
  attestation: string | undefined,
): ReturnType<Arena["append"]> | CustodyError {
  try {
    return ctx.arena.append(u, attestation);
  } catch (err) {
    if (!(err instanceof CustodyError)) throw err;
    return err;
  }
}

const reject = (
  request: LaneArenaEvent["type"],
  error: CustodyError,
  stage: "check" | "arena" = "arena",
): Extract<LaneArenaEmitted, { type: "rejected" }> => ({
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
function answerUnit(
  verdicts: UnitVerdictEmitted[] | undefined,
  out: { emit(e: UnitVerdictEmitted): void },
  e: UnitVerdictEmitted,
): void {
  if (verdicts) verdicts.push(e);
  else out.emit(e);
}
/** Validate → classify (term, overlap, duplicate) → copy into the arena within credits → accept. */
function admitUnits(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  // One unit, or a frame's units in order (one event per frame keeps the actor off the per-unit path).
  const units = event.type === "admit" ? [event] : event.type === "admitMany" ? event.units : [];
  const forwardPins = event.type === "admit" || event.type === "admitMany" ? (event.forwardPins ?? 0) : 0;
  let lanes = context.lanes;
  // A frame's verdicts go out as one emitted event: an emit per unit cost as much as the event did.
  const verdicts: UnitVerdictEmitted[] | undefined = event.type === "admitMany" ? [] : undefined;
  for (const { unit: u, attestation } of units) {
    const check = classifyUnit(context, u);
    if (!check.ok) {
      answerUnit(verdicts, out, reject("admit", check.error, "check"));
      continue;
    }
    const { log, fresh, verdict } = check;
    const append = verdict === UnitVerdict.duplicate ? undefined : storeUnit(context, u, attestation);
    if (append instanceof CustodyError) {
      answerUnit(verdicts, out, reject("admit", append));
      continue;
    }
    if (fresh) context.logs.set(laneKey(log.volume, log.lane), log);
    // Without summaries the progress report (contiguous prefix, holes) is not computed per unit.
    const progress = context.summaries ? log.accept(u) : undefined;
    if (!progress) log.record(u);
    if (append?.opened)
      for (let i = 0; i < forwardPins; i++) context.arena.pin(append.segmentId, PinReason.in_flight_forward);
    if (append?.sealedFull !== undefined) {
      out.cancelSeal(append.sealedFull);
      out.emit({ type: "sealed", segmentId: append.sealedFull, full: true });
    }
    if (append?.opened && context.sealTimers) {
      out.sealDue({ type: "sealDue", segmentId: append.segmentId, volume: u.volume, lane: u.lane });
    }
    if (context.summaries) {
      lanes = { ...lanes, [laneKey(u.volume, u.lane)]: summarize(log) };
      out.assign({ report: context.arena.report(), lanes });
    }
    const admitted: UnitVerdictEmitted = {
      type: "admitted",
      volume: u.volume,
      lane: u.lane,
      firstSeq: u.firstSeq,
      lastSeq: u.lastSeq,
      verdict: progress?.verdict ?? verdict,
      segmentId: append?.segmentId,
      opened: append?.opened ?? false,
    };
    answerUnit(
      verdicts,
      out,
      progress
        ? { ...admitted, contiguousThrough: progress.contiguousThrough, holes: progress.holes.toJSON() }
        : admitted,
    );
  }
  if (verdicts) out.emit({ type: "admittedMany", verdicts });
}

/** An explicit seal, or the max-open-delay timer of the segment still open. */
function sealOpen(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "seal" && event.type !== "sealDue") return;
  const open = context.arena.openSegmentOf(event.volume, event.lane);
  if (open === undefined || (event.type === "sealDue" && open !== event.segmentId)) return;
  const r = context.arena.seal(event.volume, event.lane);
  if (r.deferred) {
    out.emit({ type: "sealDeferred", segmentId: open });
    if (context.sealTimers) out.sealDue({ type: "sealDue", segmentId: open, volume: event.volume, lane: event.lane });
  } else {
    if (context.sealTimers) out.cancelSeal(open);
    out.emit({ type: "sealed", segmentId: open, full: false });
  }
  if (context.summaries) out.assign({ report: context.arena.report() });
}

function pinSegment(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "pin") return;
  const r = attempt(context, false, () => context.arena.pin(event.segmentId, event.reason));
  if (!r.ok) return out.emit(reject("pin", r.error));
  if (context.summaries) out.assign({ report: context.arena.report() });
}

function unpinSegment(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "unpin") return;
  const r = attempt(context, false, () => context.arena.unpin(event.segmentId, event.reason));
  if (!r.ok) return out.emit(reject("unpin", r.error));
  if (r.value) out.emit({ type: "recycled", segmentId: event.segmentId });
  if (context.summaries) out.assign({ report: context.arena.report() });
}

function grantCredit(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "grant") return;
  const r = attempt(context, false, () => {
    if (event.secure && context.arena.wantsIncrement()) context.arena.secureIncrement();
    return context.arena.grant(event.volume, event.lane, event.bytes);
  });
  if (!r.ok) return out.emit(reject("grant", r.error));
  out.emit({ type: "granted", volume: event.volume, lane: event.lane, requested: event.bytes, granted: r.value });
  if (context.summaries) out.assign({ report: context.arena.report() });
}

function revokeCredit(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "revoke") return;
  const bytes = context.arena.revoke(event.volume, event.lane);
  out.emit({ type: "revoked", volume: event.volume, lane: event.lane, bytes });
  if (context.summaries) out.assign({ report: context.arena.report() });
}

/** Discard: obligations for these ranges ended; whole segments recycle with no disk I/O. */
function releaseRanges(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "release") return;
  const parsed = attempt(context, true, () => RangeSet.fromJSON(event.ranges));
  if (!parsed.ok) return out.emit(reject("release", parsed.error, "check"));
  const r = attempt(context, false, () => {
    const ended = context.arena.release(event.volume, event.lane, parsed.value);
    const log = laneLog(context, event.volume, event.lane);
    log.release(parsed.value);
    return { log, ended };
  });
  if (!r.ok) return out.emit(reject("release", r.error));
  out.emit({ type: "released", volume: event.volume, lane: event.lane, segmentIds: r.value.ended });
  if (context.summaries)
    out.assign({
      report: context.arena.report(),
      lanes: { ...context.lanes, [laneKey(event.volume, event.lane)]: summarize(r.value.log) },
    });
}

/** The owner's spill stream synced a segment in time: custody continues at disk residency. */
function recordSpill(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "recordSpill") return;
  if (!context.arena.markSpilled(event.segmentId, event.evidence)) return;
  out.emit({ type: "spilled", segmentIds: [event.segmentId] });
  if (context.summaries) out.assign({ report: context.arena.report() });
}

/** Export form of a sealed RAM segment, for custody transfer to another holder. */
function exportSegment(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "export") return;
  const r = attempt(context, false, () => context.arena.exportSegment(event.segmentId));
  if (!r.ok) return out.emit(reject("export", r.error));
  out.emit({ type: "exported", segmentId: event.segmentId, bytes: r.value });
}

/** Takes custody of another holder's exported segment (validated whole before any change). */
function importSegment(context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut): void {
  if (event.type !== "import") return;
  // Check every unit against the lane log first (stale term, overlap): all or nothing.
  const checked = attempt(context, true, () => {
    const d = decodeSegment(event.bytes);
    const log = context.logs.get(laneKey(d.volume, d.lane)) ?? new LaneLog(d.volume, d.lane);
    for (const u of d.units) log.classify(u);
    return log;
  });
  if (!checked.ok) return out.emit(reject("import", checked.error, "check"));
  const r = attempt(context, false, () => context.arena.importSegment(event.bytes));
  if (!r.ok) return out.emit(reject("import", r.error));
  const log = checked.value;
  context.logs.set(laneKey(log.volume, log.lane), log);
  for (const u of context.arena.units(r.value.segmentId)) log.record(u);
  // Found on disk at start: custody continues there, using no RAM.
  if (event.evidence !== undefined) context.arena.markSpilled(r.value.segmentId, event.evidence);
  out.emit({
    type: "imported",
    segmentId: r.value.segmentId,
    volume: r.value.volume,
    lane: r.value.lane,
    seqs: r.value.seqs.toJSON(),
  });
  if (context.summaries)
    out.assign({
      report: context.arena.report(),
      lanes: { ...context.lanes, [laneKey(r.value.volume, r.value.lane)]: summarize(log) },
    });
}

/** One ingress event's handling over the actor's context. */
type IngressHandler = (context: LaneArenaContext, event: LaneArenaEvent, out: IngressOut) => void;

/** The ingress events and their handlers; any other event changes nothing. */
export const ingressHandlers = {
  admit: admitUnits,
  admitMany: admitUnits,
  seal: sealOpen,
  sealDue: sealOpen,
  pin: pinSegment,
  unpin: unpinSegment,
  grant: grantCredit,
  revoke: revokeCredit,
  release: releaseRanges,
  export: exportSegment,
  import: importSegment,
  recordSpill,
} satisfies Partial<Record<LaneArenaEvent["type"], IngressHandler>>;

/** The handler of an event, if it is an ingress event. */
export function ingressHandlerOf(type: LaneArenaEvent["type"]): IngressHandler | undefined {
  return (ingressHandlers as Partial<Record<LaneArenaEvent["type"], IngressHandler>>)[type];
}

/** Thrown when the ingress-only actor is asked for what only the statechart does. */
export class LaneArenaInputError extends CustodyError {}

/** The port of one transition: emits through the actor's scope (a class, not closures per event). */
class TransitionOut implements IngressOut {
  constructor(
    private readonly scope: { emit(e: LaneArenaEmitted): void },
    public next: LaneArenaContext,
  ) {}
  emit(e: LaneArenaEmitted): void {
    this.scope.emit(e);
  }
  sealDue(e: Extract<LaneArenaEvent, { type: "sealDue" }>): void {
    throw new LaneArenaInputError("invalid_input", "the ingress-only lane arena runs no seal timers", {
      segmentId: e.segmentId,
    });
  }
  cancelSeal(): void {}
  assign(patch: Partial<LaneArenaContext>): void {
    this.next = { ...this.next, ...patch };
  }
}

/**
 * The lane arena actor for an owner that spills through its own spill stream (`recordSpill`),
 * secures capacity with each grant (`secure: true`) and runs its own seal timers: a holder lane.
 * The same context, events, handlers and emissions as `laneArenaMachine` without its spill and
 * growth regions, as an XState transition actor: timed around the send in bench:holder's busy
 * holder, a statechart step (transition selection, action queue, snapshot) cost 26 µs per frame
 * beyond its handler, this actor 5 µs.
 */
const ingressTransition = fromTransition<
  LaneArenaContext,
  LaneArenaEvent,
  ActorSystem<any>,
  LaneArenaInput,
  LaneArenaEmitted
>(
  (context, event, scope) => {
    const handler = ingressHandlerOf(event.type);
    if (handler === undefined) return context;
    const out = new TransitionOut(scope, context);
    handler(context, event, out);
    return out.next;
  },
  ({ input }) => {
    if (input.sealTimers !== false || input.spill !== undefined || input.acquireIncrement !== undefined) {
      throw new LaneArenaInputError(
        "invalid_input",
        "the ingress-only lane arena needs sealTimers: false and no spill target or capacity source",
        {},
      );
    }
    return laneArenaContext({ input });
  },
);

/** `ingressTransition`, whose snapshot reads "stopped" once the actor stops, as a statechart's does. */
export const laneArenaIngressLogic: typeof ingressTransition = {
  ...ingressTransition,
  transition: (snapshot, event, scope) =>
    (event as { type: string }).type === "xstate.stop"
      ? { status: "stopped", output: undefined, error: undefined, context: snapshot.context }
      : ingressTransition.transition(snapshot, event, scope),
};
