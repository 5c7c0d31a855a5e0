import { decodeReceiptBatch, receiptBatchSpec, verifyReceiptBatch } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import {
  decodeMessage,
  encodeMessage,
  encodeTransferOffer,
  receiptSubject,
  transferSubject,
  unitSpec,
} from "../../transport/protocol/index.ts";
import type { TransportSubscription } from "../../transport/index.ts";
import { laneKey } from "./holder-config.ts";
import type { HolderCore } from "./holder-core.ts";
import type { HolderLane } from "./holder-lane.ts";

/**
 * A fenced holder's last act (issue #46: one identity, one process). When the control log admits
 * a newer incarnation of this holder — started elsewhere, with its own, empty state — this one
 * stops serving and hands what it still retains to the newer one: ordinary transfer offers on its
 * own transfer subject, which, once this process has unsubscribed, only the newer incarnation
 * hears. The newer one checks and admits them like any transfer (digests, the writer's
 * attestations, arena space; what it already holds is skipped) and receipts them under its own
 * incarnation. Without this, units the writer forgot because this incarnation had receipted them,
 * and that no other holder keeps, would exist nowhere the control log counts.
 *
 * It reads from RAM and from the spill stream (still open: the core was stopped with keepSpill),
 * and never releases, receipts or forwards anything itself. It watches the lane's receipts for the
 * newer incarnation's (verified against the control log) and offers again what they do not cover
 * yet, every `HANDOVER_RETRY_MS` for at most `HANDOVER_ROUNDS` rounds; what is still not covered
 * then is reported as unconfirmed (an offer refused for want of space, a newer incarnation gone).
 */

/** Units per read from a lane (a page; the offers are then cut by bytes). */
const PAGE_UNITS = 256;

/** How long a round waits for the newer incarnation's receipts before offering the rest again. */
export const HANDOVER_RETRY_MS = 1_000;
/** Rounds of offers before the rest is given up as unconfirmed. */
export const HANDOVER_ROUNDS = 5;

/** What a handover did: units offered (over all rounds) and sequences the newer incarnation never receipted. */
export interface HandoverReport {
  readonly offeredUnits: number;
  readonly unconfirmedSeqs: number;
}

/**
 * Offers everything retained to incarnation `by` of this holder until its receipts cover it (or the rounds run out).
 */
export async function handOver(core: HolderCore, by: number): Promise<HandoverReport> {
  const { transport, clock, peers } = core.io;
  const me = core.config.holderId;
  const confirmed = new Map<string, RangeSet>();
  let wake: (() => void) | undefined;
  const missing = (hl: HolderLane) =>
    hl.obligations.retained
      .subtract(hl.obligations.released)
      .subtract(confirmed.get(laneKey(hl.volume, hl.lane)) ?? RangeSet.EMPTY);
  const done = () => [...core.lanes.values()].every((hl) => missing(hl).isEmpty);
  const subs: TransportSubscription[] = [...core.lanes.values()].map((hl) =>
    transport.subscribe(receiptSubject(hl.volume, hl.lane), (msg) => {
      try {
        const signed = decodeMessage(receiptBatchSpec, msg.data);
        const head = decodeReceiptBatch(signed.body).holder;
        if (head.holderId !== me || head.incarnation < by) return;
        const batch = verifyReceiptBatch(signed, {
          stream: { volume: hl.volume, lane: hl.lane, subject: receiptSubject(hl.volume, hl.lane) },
          holderKey: (id, inc) => peers.key(id, inc),
          currentIncarnation: (id) => peers.incarnation(id),
          topologyEpoch: core.config.epoch,
          policyGeneration: core.config.policyGeneration,
          released: () => RangeSet.EMPTY,
        });
        const key = laneKey(hl.volume, hl.lane);
        for (const r of batch.receipts) confirmed.set(key, (confirmed.get(key) ?? RangeSet.EMPTY).union(r.retained));
        if (done()) wake?.();
      } catch {
        core.counters.inc("handover_receipt_refused");
      }
    }),
  );
  let offeredUnits = 0;
  let offerId = 0;
  // A flush waits for the server; a connection that is down must not hold the process for ever.
  const flushed = () =>
    Promise.race([
      transport.flush().catch(() => undefined),
      new Promise<void>((resolve) => clock.setTimeout(() => resolve(), HANDOVER_RETRY_MS)),
    ]);
  try {
    await flushed();
    for (let round = 0; round < HANDOVER_ROUNDS && !done(); round++) {
      for (const hl of core.lanes.values()) offeredUnits += await offerLane(core, hl, missing(hl), () => ++offerId);
      await flushed();
      await new Promise<void>((resolve) => {
        wake = resolve;
        clock.setTimeout(() => resolve(), HANDOVER_RETRY_MS);
        if (done()) resolve();
      });
    }
  } finally {
    for (const s of subs) s.unsubscribe();
  }
  const unconfirmedSeqs = [...core.lanes.values()].reduce((n, hl) => n + missing(hl).count, 0);
  core.counters.inc("handover_offered_units", offeredUnits);
  core.counters.inc("handover_unconfirmed_seqs", unconfirmedSeqs);
  return { offeredUnits, unconfirmedSeqs };
}

/** Offers the retained units of `hl` within `seqs` as transfer offers to this holder's own id; returns how many. */
async function offerLane(core: HolderCore, hl: HolderLane, seqs: RangeSet, nextId: () => number): Promise<number> {
  const { transport } = core.io;
  const me = core.config.holderId;
  // Half the server's max_payload leaves room for the offer's framing and attestations.
  const maxOfferBytes = Math.floor((transport.maxPayloadBytes?.() ?? 1024 * 1024) / 2);
  let offered = 0;
  let left = seqs;
  while (!left.isEmpty) {
    const page = await hl.unitsPage(core.spillStream, left, PAGE_UNITS, maxOfferBytes);
    if (page.units.length === 0) break;
    for (const chunk of byBytes(page.units, maxOfferBytes)) {
      const units = chunk.map((u) =>
        encodeMessage(unitSpec, { ...u, payload: new Uint8Array(u.payload), digest: new Uint8Array(u.digest) }),
      );
      const tokens = chunk.map((u) => page.attestations.get(u.firstSeq)).filter((t): t is string => t !== undefined);
      transport.publish(
        transferSubject(me),
        encodeTransferOffer({ from: me, to: me, volume: hl.volume, lane: hl.lane, offerId: nextId(), units }, tokens),
      );
      offered += chunk.length;
    }
    if (page.complete) break;
    // Pages go by a cursor: the highest first sequence returned (see HolderLane.unitsPage).
    const cursor = Math.max(...page.units.map((u) => u.firstSeq));
    left = left.intersect(RangeSet.of(cursor + 1, Number.MAX_SAFE_INTEGER));
  }
  if (!seqs.isEmpty)
    core.note({ type: "transfer_offered", lane: laneKey(hl.volume, hl.lane), to: me, seqs: seqs.toString() });
  return offered;
}

/** `units` cut into runs of at most `maxBytes` payload bytes each (a unit larger than that travels alone). */
function byBytes(units: readonly TransportUnit[], maxBytes: number): TransportUnit[][] {
  const out: TransportUnit[][] = [];
  let cur: TransportUnit[] = [];
  let bytes = 0;
  for (const u of units) {
    if (cur.length > 0 && bytes + u.payload.byteLength > maxBytes) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(u);
    bytes += u.payload.byteLength;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
