import type { RangeSet, TransportUnit } from "../../lanes/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import type { WireCredit } from "../../transport/protocol/index.ts";
import type { FlushOutcome, HolderObservation, HolderTimer, LoadedUnit } from "./holder-ports.ts";
import type { ReceiptLink } from "./holder-state.ts";

/**
 * What the holder's pure steps (holder-step.ts) ask for, as data. The machine raises `arm` to itself
 * after a delay; every other effect is run by the executor the holder's start function provides
 * (holder-executor.ts), the only code that reaches the transport, the counters, the clock or the
 * lane runtime.
 */
export type HolderEffect =
  /** Increments counter `name` (by 1 unless `by`). */
  | { readonly type: "count"; readonly name: string; readonly by?: number }
  /** Records an observation for tests and operators. */
  | { readonly type: "observe"; readonly observation: HolderObservation }
  /** Raises `event` to the machine after `ms` (a delayed event, cancelled when the actor stops). */
  | { readonly type: "arm"; readonly ms: number; readonly event: HolderTimer }
  /** Signs and publishes `lane`'s receipt batch now, linked to the admit spans it covers. */
  | {
      readonly type: "publishReceipt";
      readonly lane: string;
      readonly units: number;
      readonly links: readonly ReceiptLink[];
    }
  /**
   * A release frontier that passed its checks, for `holder` (us or an edge): applied as far as the
   * control log backs it (the peer directory's fold, behind the executor).
   */
  | { readonly type: "applyFrontier"; readonly lane: string; readonly holder: string; readonly ranges: RangeSet }
  /**
   * A readable receipt batch of an edge or the transfer neighbor (`from`) on `lane`: verified
   * against the peer directory, then applied to the lane's obligations (`msg` carries its trace context).
   */
  | {
      readonly type: "applyLaneReceipt";
      readonly lane: string;
      readonly from: string;
      readonly signed: { readonly body: Uint8Array; readonly signature: Uint8Array };
      readonly msg: InboundMessage;
    }
  /**
   * The connection is back: credits are re-announced and asked for, receipts re-published, and what
   * an edge has not receipted is due for re-sending at once (whatever was published meanwhile is gone).
   */
  | { readonly type: "reconnected" }
  /** Retained coverage is re-announced on every lane (and admission asked for until granted). */
  | { readonly type: "republishReceipts" }
  /** Units an edge has not receipted a while after their last send are sent again. */
  | { readonly type: "resendDue" }
  /** Memory pressure is relieved by spilling or transferring sealed segments, if the arena needs it. */
  | { readonly type: "relievePressure" }
  /** Answers a fetch request for `lane` with the `wanted` units it retains, paged (holder-read-steps.ts). */
  | {
      readonly type: "serveFetch";
      readonly lane: string;
      readonly msg: InboundMessage;
      readonly after: number;
      readonly limit: number;
      readonly wanted: RangeSet;
    }
  /** Answers a retention challenge for `lane` with the keyed digest over the units of `seqs` it holds. */
  | {
      readonly type: "answerAudit";
      readonly lane: string;
      readonly msg: InboundMessage;
      readonly nonce: Uint8Array;
      readonly seqs: RangeSet;
    }
  /** A downstream edge's credit grant on `lane`: its window follows it, and what now fits is sent. */
  | { readonly type: "applyGrant"; readonly lane: string; readonly edge: string; readonly grant: WireCredit }
  /** A frontier caught up with the control log (`release.checked`): what the log now backs of it is applied. */
  | { readonly type: "applyCheckedFrontier"; readonly lane: string; readonly holder: string; readonly ranges: RangeSet }
  /** Units read back from disk for an edge are sent in order within its credits. */
  | {
      readonly type: "resendLoaded";
      readonly lane: string;
      readonly edge: string;
      readonly units: readonly LoadedUnit[];
    }
  /** The lane's open segment is due to seal (the lane runtime decides whether it is worth sealing yet). */
  | { readonly type: "sealDue"; readonly lane: string }
  /** One sequential flush of sealed, fully forwarded RAM segments (`all`: seal and flush everything). */
  | { readonly type: "startFlush"; readonly all: boolean }
  /** A flush's outcome moves residency (only on an in-deadline sync) and is counted. */
  | { readonly type: "applyFlush"; readonly result: FlushOutcome }
  /** Protected-RAM custody leaves RAM: every lane seals, offers to the transfer neighbor, and spills. */
  | { readonly type: "evacuate" }
  /** The hold-up time ended: any protected-receipted range still only in RAM is reported as a violation. */
  | { readonly type: "evacuationDeadline" }
  /**
   * A transfer offer from `from` whose units decoded and validated for `volume`/`lane`: admitted
   * whole (writer attestations checked against `tokens`, space reserved) or refused whole.
   */
  | {
      readonly type: "admitTransfer";
      readonly from: string;
      readonly volume: string;
      readonly lane: string;
      readonly units: readonly TransportUnit[];
      readonly tokens: readonly string[];
    }
  /** The holder stopped granting credit: every lane's credit grantor closes to new promises. */
  | { readonly type: "closeGrants" }
  /** The state's evidence changed: the protection status it gives the RAM queued now is recorded. */
  | { readonly type: "evidenceChanged" };

/** A refusal: counted under its code and recorded (on `lane` when known). */
export function rejection(code: string, lane?: string): HolderEffect[] {
  const observation: HolderObservation =
    lane === undefined ? { type: "rejected", code } : { type: "rejected", lane, code };
  return [
    { type: "count", name: code },
    { type: "observe", observation },
  ];
}
