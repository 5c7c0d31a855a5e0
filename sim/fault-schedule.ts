import type { Random } from "../core/index.ts";
import type { Scenario } from "../policies/index.ts";
import { HoldKind } from "../custody/index.ts";

/** Kinds of fault the simulator injects. */
export const FaultKind = {
  /** A required scenario happens: its losses hit the ground truth (RAM lost, disks kept or destroyed per loss kind). */
  strike: "strike",
  /** A holder's protected-RAM hold-up evidence becomes invalid (battery/capacitor fault). */
  evidenceDegrade: "evidence_degrade",
  /** The controller is down for `durationMs`; it restarts with its durable grants but no receipts. */
  controllerLoss: "controller_loss",
  /** Sites in `a` cannot talk to sites in `b` for `durationMs`. */
  partition: "partition",
  /**
   * With failover (a standby controller): the active controller process is frozen or cut off from
   * the control log for `durationMs` (SIGSTOP, a partition), then resumes where it stopped.
   */
  controllerPause: "controller_pause",
  /**
   * Not a fault but an operator's act on the same schedule: a hold (`hold_ranges`: a PITR pin, or
   * a recovery reading) on sequences `first`..`last` at `holders` (every holder when empty), ended
   * `durationMs` later (a pin by the operator's `end_hold`, a recovery by the controller when its
   * `untilMs` has passed). While it stands no holder it binds may release those sequences.
   */
  hold: "hold",
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

/** One scheduled fault. `atMs` is virtual time from the start of the run. */
export type FaultEvent =
  | { readonly kind: typeof FaultKind.strike; readonly atMs: number; readonly scenario: string }
  | { readonly kind: typeof FaultKind.evidenceDegrade; readonly atMs: number; readonly holder: string }
  | { readonly kind: typeof FaultKind.controllerLoss; readonly atMs: number; readonly durationMs: number }
  | { readonly kind: typeof FaultKind.controllerPause; readonly atMs: number; readonly durationMs: number }
  | {
      readonly kind: typeof FaultKind.partition;
      readonly atMs: number;
      readonly durationMs: number;
      readonly a: readonly string[];
      readonly b: readonly string[];
    }
  | {
      readonly kind: typeof FaultKind.hold;
      readonly atMs: number;
      readonly durationMs: number;
      readonly holdKind: HoldKind;
      readonly first: number;
      readonly last: number;
      readonly holders: readonly string[];
    };

/** What the schedule generator needs to know about the world. */
export interface FaultContext {
  readonly durationMs: number;
  readonly scenarios: readonly Scenario[];
  /** Holders with protected RAM (candidates for evidence degradation). */
  readonly protectedHolders: readonly string[];
  readonly sites: readonly string[];
  /** Repair budget: a strike this long after the previous destructive fault is within the contract. */
  readonly settleMs: number;
  /** A standby controller runs: the active one may also be paused (one more draw, only then). */
  readonly failover?: boolean;
  /** Holders a hold may bind (none: no holds are drawn). */
  readonly holders?: readonly string[];
  /** The workload's write interval: a hold's sequences are drawn around what is written by its time. */
  readonly writeIntervalMs?: number;
}

/**
 * Draws a fault schedule (0–6 faults, sorted by time) from `random`. Sequential strikes are spaced
 * by intervals drawn around the repair budget, so some runs stay within the contract and others
 * do not. Deterministic for a given Random stream.
 */
export function generateFaultSchedule(random: Random, ctx: FaultContext): FaultEvent[] {
  const out: FaultEvent[] = [];
  const n = random.int(0, 6);
  const span = ctx.durationMs;
  // Sequential strikes: one to three scenarios at chosen intervals.
  if (ctx.scenarios.length > 0 && random.chance(0.8)) {
    const strikes = random.int(1, 3);
    let at = random.int(Math.floor(span * 0.3), Math.floor(span * 0.6));
    for (let i = 0; i < strikes && at < span; i++) {
      out.push({ kind: FaultKind.strike, atMs: at, scenario: random.pick(ctx.scenarios).name });
      at += random.int(Math.floor(ctx.settleMs / 2), ctx.settleMs * 2);
    }
  }
  for (let i = 0; i < n; i++) {
    const atMs = random.int(1, span - 1);
    const which = random.int(0, 2);
    if (which === 0 && ctx.protectedHolders.length > 0) {
      out.push({ kind: FaultKind.evidenceDegrade, atMs, holder: random.pick(ctx.protectedHolders) });
    } else if (which === 1) {
      const pause = ctx.failover === true && random.chance(0.5);
      out.push({
        kind: pause ? FaultKind.controllerPause : FaultKind.controllerLoss,
        atMs,
        durationMs: random.int(500, 8_000),
      });
    } else if (ctx.sites.length >= 2) {
      const shuffled = random.shuffle(ctx.sites);
      const cut = random.int(1, shuffled.length - 1);
      out.push({
        kind: FaultKind.partition,
        atMs,
        durationMs: random.int(200, 10_000),
        a: shuffled.slice(0, cut).sort(),
        b: shuffled.slice(cut).sort(),
      });
    }
  }
  // From their own fork: adding holds shifts none of the faults drawn above.
  out.push(...drawHolds(random.fork("holds"), ctx));
  return out.sort((x, y) => x.atMs - y.atMs || x.kind.localeCompare(y.kind));
}

/**
 * 0–3 holds at seeded times over seeded sequences: each starts a little below what the workload
 * has written by then (so some of it is not released yet) and runs on past it (so releases that
 * come while it stands must skip it), binding every holder or one or two of them.
 */
function drawHolds(random: Random, ctx: FaultContext): FaultEvent[] {
  const holders = ctx.holders ?? [];
  const interval = ctx.writeIntervalMs ?? 0;
  if (holders.length === 0 || interval <= 0) return [];
  const out: FaultEvent[] = [];
  const n = random.int(0, 3);
  for (let i = 0; i < n; i++) {
    const atMs = random.int(1_000, Math.max(1_001, ctx.durationMs - 2_000));
    const written = Math.floor(atMs / interval);
    const first = Math.max(1, written - random.int(0, 30));
    const last = first + random.int(5, 80);
    const bound = random.chance(0.5) ? [] : [...new Set([random.pick(holders), random.pick(holders)])].sort();
    out.push({
      kind: FaultKind.hold,
      atMs,
      durationMs: random.int(1_000, 8_000),
      holdKind: random.chance(0.5) ? HoldKind.pitr_pin : HoldKind.recovery,
      first,
      last,
      holders: bound,
    });
  }
  return out;
}

/** True for faults that destroy data or evidence (they open a window outside the contract). */
export function isDestructive(f: FaultEvent): boolean {
  return f.kind === FaultKind.strike || f.kind === FaultKind.evidenceDegrade;
}

/** A canonical string for a schedule; equal strings mean the same faults at the same times. */
export function scheduleKey(faults: readonly FaultEvent[]): string {
  return faults.map((f) => JSON.stringify(f)).join(";");
}

/** The shape of a schedule: kinds and targets in order, without times (used to count distinct schedules explored). */
export function scheduleShape(faults: readonly FaultEvent[]): string {
  return faults
    .map((f) => {
      switch (f.kind) {
        case FaultKind.strike:
          return `strike(${f.scenario})`;
        case FaultKind.evidenceDegrade:
          return `degrade(${f.holder})`;
        case FaultKind.controllerLoss:
          return "controller_loss";
        case FaultKind.controllerPause:
          return "controller_pause";
        case FaultKind.partition:
          return `partition(${f.a.join("+")}|${f.b.join("+")})`;
        case FaultKind.hold:
          return `hold(${f.holdKind}:${f.holders.join("+") || "*"})`;
      }
    })
    .join(",");
}
