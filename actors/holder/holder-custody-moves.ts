import { SpanKind } from "@opentelemetry/api";
import { unitRecordBytes } from "../../arena/index.ts";
import { CustodyError } from "../../core/index.ts";
import { UnitVerdict } from "../../lanes/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { eventSubject, transferSubject } from "../../transport/protocol/index.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/index.ts";
import { laneKey } from "./holder-config.ts";
import type { HolderCore } from "./holder-core.ts";
import type { FlushOutcome } from "./holder-ports.ts";
import type { HolderLane, SpawnLaneArena } from "./holder-lane.ts";
import { encodeTransferOffer, holderEventSpec } from "../../transport/protocol/index.ts";
import { SegmentSpillWriter } from "../lane-arena/index.ts";
import { authenticateDecoded } from "./unit-authentication.ts";

/** What the holder remembers of a segment it writes to its spill stream. */
interface FlushTag {
  readonly lane: string;
  readonly segmentId: number;
  readonly seqs: RangeSet;
}

/** How long an unanswered transfer offer stands before its segments may be offered again. */
export const TRANSFER_RETRY_MS = 1_000;

/**
 * The holder's custody moves besides release: persistence flushes through the spill stream, custody
 * transfer to a neighbor, and protected-RAM evacuation. Three different operations are never
 * confused: discard (obsolete: recycled with zero writes, see `HolderLane.releaseAllowed`), spill
 * (custody kept, residency ram → disk, only on a completed in-deadline fdatasync) and transfer
 * (custody moves to a neighbor; local release only after the neighbor's own signed receipt).
 */
export class HolderCustodyMoves {
  /** The spill driver; it holds the segments written but not yet covered by an in-deadline sync. */
  private readonly writer = new SegmentSpillWriter<FlushTag>();
  private readonly appended = new Set<number>();
  /** Transfer offers awaiting the neighbor's receipt. */
  private readonly offers = new Map<number, { key: string; seqs: RangeSet; at: number }>();
  private offerSeq = 0;
  private flushing = false;
  /** Sealed RAM segments the last flush passed over as not this holder's to persist (each counted once). */
  private notTarget = new Set<number>();

  constructor(private readonly core: HolderCore) {}

  // ---- persistence flush ------------------------------------------------------------------------

  /**
   * Starts one sequential flush of sealed, fully forwarded RAM segments (all lanes, one append
   * stream). A segment that other coverage already made releasable is released instead, and one
   * the control log's persistence targets leave to other holders stays in RAM (counted once as
   * `flush_skipped_not_target`) — unless the flush `relieves` memory pressure or an evacuation is
   * under way: then keeping custody beats saving a write. A segment that stops being this holder's
   * to persist (released, or the targets changed) before its turn is cancelled unwritten
   * (`flush_cancelled`). Completion comes back as `flush.completed`.
   */
  startFlush(all = false, relieves = false): void {
    const spill = this.core.spillStream;
    const policy = this.core.config.flush;
    if (!spill || !policy || this.flushing) return;
    const todo: { hl: HolderLane; key: string; id: number; seqs: RangeSet }[] = [];
    const passedOver = new Set<number>();
    for (const [key, hl] of this.core.lanes) {
      if (all) hl.seal();
      this.core.tryRelease(key, hl);
      for (const s of hl.sealedSegments()) {
        if (s.residency !== "ram" || s.hasForwardPins || this.appended.has(s.id) || s.seqs.isEmpty) continue;
        if (!this.targeted(hl, s.seqs, relieves)) {
          // Another holder persists it for the lane: it stays in RAM here until released.
          passedOver.add(s.id);
          if (!this.notTarget.has(s.id)) this.core.counters.inc("flush_skipped_not_target");
          continue;
        }
        todo.push({ hl, key, id: s.id, seqs: s.seqs });
      }
    }
    this.notTarget = passedOver;
    if (todo.length === 0 && !this.writer.pending) return;
    this.flushing = true;
    const span = this.core.spans.startSpan("holder.flush", {
      kind: SpanKind.INTERNAL,
      attributes: { "custody.segments": todo.length },
    });
    const items = todo.map((t) => ({
      volume: t.hl.volume,
      lane: t.hl.lane,
      first: t.seqs.min!,
      last: t.seqs.max!,
      tag: { lane: t.key, segmentId: t.id, seqs: t.seqs },
      // Not started yet when it was released (recycled) or stopped being this holder's to persist:
      // cancelled, nothing written. The record keeps the writer attestations stored with the units,
      // so a restart can pass them on.
      body: () => {
        if (t.hl.arena.holds(t.id) && this.targeted(t.hl, t.seqs, relieves)) return t.hl.arena.exportSegment(t.id);
        this.core.counters.inc("flush_cancelled");
        return undefined;
      },
    }));
    const run = async (): Promise<FlushOutcome> => {
      const r = await this.writer.write(spill, items, policy.deadlineMs, (tag) => this.appended.add(tag.segmentId));
      if (r.kind === "deadline_missed") {
        let seqs = RangeSet.EMPTY;
        for (const v of r.pending) seqs = seqs.union(v.seqs);
        return { kind: "deadline_missed", seqs };
      }
      return { kind: "synced", spilled: r.spilled.map(({ tag, evidence }) => ({ ...tag, evidence })) };
    };
    run()
      .catch(
        (err: unknown) =>
          ({ kind: "failed", message: err instanceof Error ? err.message : String(err) }) as FlushOutcome,
      )
      .then((result) => {
        span.setAttribute("custody.flush", result.kind);
        span.end();
        this.core.send({ type: "flush.completed", result });
      });
  }

  /**
   * Applies a flush outcome. Only `synced` moves residency and advances the persistence cut; a
   * missed deadline or a failure is counted and changes no evidence.
   */
  applyFlush(result: FlushOutcome): void {
    this.flushing = false;
    if (result.kind === "synced") {
      const lanes = new Set<string>();
      let seqs = RangeSet.EMPTY;
      for (const s of result.spilled) {
        const hl = this.core.lanes.get(s.lane);
        this.appended.delete(s.segmentId);
        if (!hl) continue;
        hl.spilled(s.segmentId, s.seqs, s.evidence);
        lanes.add(s.lane);
        seqs = seqs.union(s.seqs);
      }
      this.core.counters.inc("flush_synced");
      this.core.note({ type: "flush", outcome: "synced", seqs: seqs.toString() });
      for (const k of lanes) this.core.receiptNow(k);
      if (this.core.granting) for (const k of lanes) this.core.lanes.get(k)?.grantor.topUpAll();
    } else if (result.kind === "deadline_missed") {
      this.core.counters.inc("flush_deadline_missed");
      this.core.note({ type: "flush", outcome: "deadline_missed", seqs: result.seqs.toString() });
    } else {
      this.core.counters.inc("flush_failed");
      this.core.note({ type: "flush_failed", message: result.message });
    }
  }

  /**
   * True when this holder persists (some of) `seqs` of the lane: the log names no other target for them, or custody
   * needs the write anyway.
   */
  private targeted(hl: HolderLane, seqs: RangeSet, relieves: boolean): boolean {
    if (relieves || this.core.evacuating) return true;
    const flushable = this.core.ports.peers.flushable?.(this.core.config.holderId, hl.volume, hl.lane, seqs);
    return flushable === undefined || !flushable.isEmpty;
  }

  // ---- pressure and transfer --------------------------------------------------------------------

  /**
   * Memory pressure: above the configured fill ratio, move custody out of RAM — transfer sealed,
   * fully forwarded segments to the neighbor, else spill. Without either, credits simply stay
   * withheld by the arena (backpressure); nothing admitted is ever dropped.
   */
  relievePressure(): void {
    this.expireOffers();
    const ratio = this.core.config.pressureRatio;
    for (const [key, hl] of this.core.lanes) {
      if (hl.fillRatio() <= ratio) continue;
      if (this.core.config.transferNeighbor) this.offer(key, hl, false);
      else this.startFlush(false, true);
    }
  }

  /**
   * An offer the neighbor never receipted (lost, or refused for lack of space) is withdrawn after
   * `TRANSFER_RETRY_MS`, so its segments can be offered again; custody never left meanwhile.
   */
  private expireOffers(): void {
    const now = this.core.io.clock.now();
    for (const [id, o] of this.offers) {
      const hl = this.core.lanes.get(o.key);
      const still = hl ? hl.inTransfer.intersect(o.seqs) : RangeSet.EMPTY;
      if (still.isEmpty) this.offers.delete(id);
      else if (now - o.at >= TRANSFER_RETRY_MS) {
        hl!.inTransfer = hl!.inTransfer.subtract(still);
        this.offers.delete(id);
        this.core.counters.inc("transfer_offer_expired");
      }
    }
  }

  /** Offers sealed, fully forwarded, RAM-resident segments not already offered to the neighbor. */
  private offer(key: string, hl: HolderLane, all: boolean): void {
    const to = this.core.config.transferNeighbor;
    if (!to) return;
    const capacity = hl.arena.report().capacityBytes;
    let ram = hl.arena.report().ramBytes;
    for (const s of hl.sealedSegments()) {
      if (!all && ram / capacity <= this.core.config.pressureRatio / 2) break;
      if (s.residency !== "ram" || s.hasForwardPins || s.seqs.isEmpty || hl.inTransfer.intersects(s.seqs)) continue;
      const span = this.core.spans.startSpan("holder.transfer_offer", {
        kind: SpanKind.PRODUCER,
        attributes: { "custody.lane": key, "custody.to": to },
      });
      // Each unit travels as an ordinary encoded `unit` message: the neighbor validates it like ingress.
      const plain = hl.arena.units(s.id);
      const seg = hl.arena.describe(s.id);
      const units = plain.map((u) =>
        encodeMessage(unitSpec, { ...u, payload: new Uint8Array(u.payload), digest: new Uint8Array(u.digest) }),
      );
      // The writer's attestations ride along, so a checking neighbor admits the units as the writer's.
      const tokens = [
        ...new Set(plain.map((_, i) => seg.attestationAt(i)).filter((t): t is string => t !== undefined)),
      ];
      hl.inTransfer = hl.inTransfer.union(s.seqs);
      const offerId = ++this.offerSeq;
      this.offers.set(offerId, { key, seqs: s.seqs, at: this.core.io.clock.now() });
      this.core.io.transport.publish(
        transferSubject(to),
        encodeTransferOffer(
          { from: this.core.config.holderId, to, volume: hl.volume, lane: hl.lane, offerId, units },
          tokens,
        ),
      );
      this.core.note({ type: "transfer_offered", lane: key, to, seqs: s.seqs.toString() });
      span.end();
      ram -= hl.arena.config.segmentBytes;
    }
  }

  /**
   * Neighbor side of a transfer whose offer and units the machine read and validated
   * (holder-transfer-step.ts `readTransferOffer`): where the holder knows its volumes' writer keys,
   * each unit must be listed by a writer attestation the offer carries; the units are admitted only
   * if the arena can promise their space now (else no receipt: the origin keeps custody), then this
   * holder publishes its own signed receipt — the origin releases only on that. Any refusal is
   * counted (`transfer_<code>`) and refuses the whole offer before anything changes.
   */
  admitOffer(
    offer: { readonly from: string; readonly volume: string; readonly lane: string },
    units: readonly TransportUnit[],
    tokens: readonly string[],
    spawnArena: SpawnLaneArena,
  ): void {
    const verdicts = authenticateDecoded(this.core.io.writerKeys, tokens, units);
    const refused = verdicts?.find((v) => !v.ok);
    if (refused !== undefined && !refused.ok) return void this.core.counters.inc(`transfer_${refused.code}`);
    // Stored with the units like ingress's, so what this holder forwards, spills or offers on stays the writer's.
    const tokenOf = new Map<TransportUnit, string>();
    verdicts?.forEach((v, i) => v.ok && tokenOf.set(units[i]!, v.token));
    const hl = this.core.laneFor(offer.volume, offer.lane, spawnArena);
    const key = laneKey(offer.volume, offer.lane);
    const fresh = units.filter((u) => {
      try {
        return hl.log.classify(u) !== UnitVerdict.duplicate;
      } catch {
        return false;
      }
    });
    const need = fresh.reduce((n, u) => n + unitRecordBytes(u), 0);
    const got = need > 0 ? hl.reserve(need) : 0;
    if (got < need) {
      hl.forfeit(got);
      this.core.counters.inc("transfer_refused_no_space");
      return;
    }
    const span = this.core.spans.startSpan("holder.transfer_admit", {
      attributes: { "custody.lane": key, "custody.from": offer.from },
    });
    let seqs = RangeSet.EMPTY;
    let opened = false;
    for (const u of fresh) {
      const token = tokenOf.get(u);
      opened = hl.store(u, token) || opened;
      // Mirrored like an ingress admission: the receipt below claims it at this holder's residency.
      this.core.ports.preserved?.keep(u, token);
      seqs = seqs.add(u.firstSeq, u.lastSeq);
    }
    if (opened) this.core.schedule(this.core.config.arena.maxOpenDelayMs, { type: "timer.seal", lane: key });
    span.end();
    this.core.note({ type: "transfer_admitted", lane: key, from: offer.from, seqs: seqs.toString() });
    this.core.receiptNow(key);
  }

  // ---- protected-RAM evacuation -----------------------------------------------------------------

  /**
   * Evidence degraded (the machine's `startEvacuation` step; it also arms the end of the hold-up
   * time): protected receipts have already stopped (the bound is checked per receipt); move every
   * protected-receipted range out of RAM — transfer to the neighbor and/or spill.
   */
  evacuate(): void {
    for (const [key, hl] of this.core.lanes) {
      hl.seal();
      if (this.core.config.transferNeighbor) this.offer(key, hl, true);
    }
    this.startFlush(true);
  }

  /**
   * End of the hold-up time: any protected-receipted range still only in RAM has lost its promised
   * coverage — report a contract violation for exactly those ranges. Relabelling does not save data.
   */
  evacuationDeadline(): void {
    for (const hl of this.core.lanes.values()) {
      const lost = hl.protectedClaimed.intersect(hl.obligations.retained).subtract(hl.obligations.diskResident);
      if (!lost.isEmpty) this.publishViolation(hl, lost, "protected-RAM evidence lost before custody was evacuated");
      hl.protectedClaimed = RangeSet.EMPTY;
    }
  }

  /** Publishes a contract-violation event for `seqs` of a lane on `custody.v1.event.<volume>`. */
  private publishViolation(hl: HolderLane, seqs: RangeSet, reason: string): void {
    const { config, counters, io } = this.core;
    counters.inc("contract_violation");
    this.core.note({ type: "violation", lane: laneKey(hl.volume, hl.lane), seqs: seqs.toString(), reason });
    io.transport.publish(
      eventSubject(hl.volume),
      encodeMessage(holderEventSpec, {
        event: "contract_violation",
        holder: config.holderId,
        incarnation: config.incarnation,
        volume: hl.volume,
        lane: hl.lane,
        ranges: seqs.toJSON(),
        reason,
        at: io.clock.now(),
      }),
    );
  }
}
