import type { ControlLease } from "../../custody/index.ts";

/**
 * The lease timings of one volume's controllers: the holder commits at least every `renewMs`
 * (a renewal when it committed nothing else); a standby claims the next term after seeing no
 * heartbeat for `timeoutMs` by its own clock; both look at the log every `checkMs`. A standby
 * takes over within about `timeoutMs + checkMs` plus one commit and a fold.
 */
export interface LeaseTimings {
  readonly renewMs: number;
  readonly timeoutMs: number;
  readonly checkMs: number;
}

/** Defaults: a takeover within about 11 s (≤ 15 s), a renewal at most every 3 s when idle. */
export const DEFAULT_LEASE_TIMINGS: LeaseTimings = { renewMs: 3_000, timeoutMs: 10_000, checkMs: 1_000 };

/**
 * What a keeper knows of the lease holder's silence: the lease's holder/term/heartbeat as last
 * read (`key`), since when by its own clock, and when it last read the log at all.
 */
export interface SilenceWatch {
  readonly key: string | undefined;
  readonly sinceMs: number;
  readonly lastReadMs: number | undefined;
}

export const UNWATCHED: SilenceWatch = { key: undefined, sinceMs: 0, lastReadMs: undefined };

/**
 * The watch after a successful read of the log at `nowMs` that found `key`. Silence counts only
 * time the keeper watched: when its previous read is more than `blindAfterMs` ago (the log was
 * unreadable during a stream-leader election, or this process was paused), nobody could have seen a
 * heartbeat, so the holder's silence starts again now. Without this, a standby that could not read
 * for longer than the lease timeout claimed the lease the moment the log came back, although the
 * holder had been just as unable to renew: the lease moved on every long election. Pure.
 */
export function watchSilence(w: SilenceWatch, key: string, nowMs: number, blindAfterMs: number): SilenceWatch {
  const blind = w.lastReadMs !== undefined && nowMs - w.lastReadMs > blindAfterMs;
  return { key, sinceMs: key !== w.key || blind ? nowMs : w.sinceMs, lastReadMs: nowMs };
}

/** Reads further apart than this many check intervals leave the keeper blind in between. */
export const BLIND_AFTER_CHECKS = 3;

/** What this controller process is doing for its volume. */
export type LeaseRole = "active" | "standby";

/** What the lease keeper does next. */
export type LeaseStep =
  | { readonly kind: "wait" }
  | { readonly kind: "claim"; readonly term: number }
  | { readonly kind: "renew"; readonly term: number }
  | { readonly kind: "step_down"; readonly holder: string; readonly term: number };

/**
 * The next step of controller `me` in `role`, given the volume's lease as last folded and how long
 * (by its own clock) the lease's holder, term and heartbeat have stayed unchanged. Pure.
 *
 * - Unleased: claim term 1 (of racing claims, the log keeps one).
 * - Held by me: as active, renew once silent for `renewMs`; as standby (a restarted process that
 *   held it before), claim the next term, so this incarnation starts a term of its own.
 * - Held by another: as active, step down at once (the log says it was deposed); as standby,
 *   claim the next term once the holder has been silent for the lease's `timeoutMs`.
 */
export function leaseStep(me: string, role: LeaseRole, lease: ControlLease | undefined, silentMs: number): LeaseStep {
  if (lease === undefined)
    return role === "active" ? { kind: "step_down", holder: "nobody", term: 0 } : { kind: "claim", term: 1 };
  if (lease.holder === me) {
    if (role === "standby") return { kind: "claim", term: lease.term + 1 };
    return silentMs >= lease.renewMs ? { kind: "renew", term: lease.term } : { kind: "wait" };
  }
  if (role === "active") return { kind: "step_down", holder: lease.holder, term: lease.term };
  return silentMs >= lease.timeoutMs ? { kind: "claim", term: lease.term + 1 } : { kind: "wait" };
}
