import { unitRecordBytes } from "../../arena/index.ts";
import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { makeTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import { encodeMessage, unitSpec, type WriteRecord } from "../../transport/protocol/index.ts";
import { noteSent } from "../hop/index.ts";
import type { UnitOutbox } from "./unit-outbox.ts";
import { openCoalescedPayload, openPayload, sealPayload } from "../../transport/protocol/index.ts";
import { derivedLaneSpecs } from "./coalesced-stream.ts";
import type { VolumeWriterConfig } from "./writer-config.ts";
import type { WriterLane } from "./writer-lane.ts";
import type { VolumeWriterPorts } from "./writer-ports.ts";

/**
 * The writer's outbound path: pending records are sealed into one encrypted unit, retained for
 * re-sending, made durable in the outbox (when there is one) and only then sent to every first hop.
 */
export class UnitShipper {
  /** Units waiting for the outbox flush that makes them durable before they are sent. */
  private readonly queue: { l: WriterLane; unit: TransportUnit; data: Uint8Array; bytes: number }[] = [];
  private flushing = false;

  constructor(
    private readonly config: VolumeWriterConfig,
    private readonly ports: Pick<VolumeWriterPorts, "clock" | "dataKey" | "outbox" | "onUnit">,
    private readonly counters: Counters,
    private readonly stopped: () => boolean,
  ) {}

  /** Seals the lane's pending records into one encrypted unit and hands it to every first-hop sender. */
  cutUnit(l: WriterLane): void {
    if (l.pending.length === 0) return;
    const recs = l.pending;
    const ts = l.pendingTs;
    l.pending = [];
    l.pendingTs = [];
    l.pendingBytes = 0;
    const id = {
      volume: this.config.volume,
      lane: l.spec.lane,
      term: this.config.term,
      firstSeq: recs[0]!.seq,
      lastSeq: recs[recs.length - 1]!.seq,
    };
    const unit = makeTransportUnit({ ...id, commitTs: ts, payload: sealPayload(this.ports.dataKey, id, recs) });
    this.ship(l, unit, true);
  }

  /**
   * Seals a derived (coalesced) window into one unit of its derived lane: the raw window's range
   * and commit times, only the surviving records (issue #22). It then takes the raw units' path.
   */
  cutDerived(
    l: WriterLane,
    parts: { firstSeq: number; lastSeq: number; commitTs: number[]; records: readonly WriteRecord[] },
  ): void {
    const id = {
      volume: this.config.volume,
      lane: l.spec.lane,
      term: this.config.term,
      firstSeq: parts.firstSeq,
      lastSeq: parts.lastSeq,
    };
    this.ship(
      l,
      makeTransportUnit({
        ...id,
        commitTs: parts.commitTs,
        payload: sealPayload(this.ports.dataKey, id, parts.records),
      }),
      true,
    );
  }

  /**
   * Retains `unit` for re-sending and sends it to every first hop — after the outbox made it
   * durable, when there is one (`store`: append it there first).
   */
  private ship(l: WriterLane, unit: TransportUnit, store: boolean): void {
    const data = encodeMessage(unitSpec, unit);
    const bytes = unitRecordBytes(unit);
    l.retention.add({ firstSeq: unit.firstSeq, lastSeq: unit.lastSeq, data, bytes });
    l.obligations.admit(unit.firstSeq, unit.lastSeq);
    this.ports.onUnit?.(unit);
    const outbox = this.ports.outbox;
    if (outbox === undefined) return this.send(l, unit, data, bytes);
    if (store) void outbox.append(unit, data).catch(() => this.counters.inc("outbox_append_failed"));
    this.queue.push({ l, unit, data, bytes });
    this.flushOutbox(outbox);
  }

  /** One outbox flush at a time; it sends exactly the units appended before it began. */
  private flushOutbox(outbox: UnitOutbox): void {
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    const covered = this.queue.length;
    void outbox.flush().then(
      () => {
        this.flushing = false;
        for (const q of this.queue.splice(0, covered)) this.send(q.l, q.unit, q.data, q.bytes);
        this.flushOutbox(outbox);
      },
      () => {
        // Not durable, so not sent: the next unit or sync tries again.
        this.flushing = false;
        this.counters.inc("outbox_flush_failed");
      },
    );
  }

  private send(l: WriterLane, unit: TransportUnit, data: Uint8Array, bytes: number): void {
    if (this.stopped()) return;
    const now = this.ports.clock.now();
    // A unit waiting for credit that every first hop has since receipted (or that the control log
    // released at them) is not sent: a restarted writer re-ships its whole outbox, and at 64 KiB
    // units a first hop's credit let three through per grant, so units its peers had long taken
    // over held the one still unprotected back for 13 s (sim seed 1003480).
    const wanted = () => l.retention.stillRetains(unit.firstSeq);
    for (const [h, s] of l.edges) {
      noteSent(l, h, unit.firstSeq, unit.lastSeq, now);
      s.send({ data, bytes, wanted });
    }
    this.counters.inc("units_sent");
  }

  /**
   * Ships again, byte for byte, the units an earlier writer process left unconfirmed. They keep
   * the term they were written under: re-sealing them under this term would make a holder that
   * sees them first treat this term as starting at their sequences, and refuse as fenced the same
   * records still arriving under the old term from a downstream holder's disk.
   */
  reship(lanes: ReadonlyMap<string, WriterLane>, recovered: readonly TransportUnit[]): void {
    const derived = new Set(derivedLaneSpecs(this.config).map((d) => d.lane));
    for (const u of recovered) {
      const l = lanes.get(u.lane);
      if (l === undefined || u.volume !== this.config.volume) continue;
      try {
        // Only units that still open with our key, below where this term's own writes begin.
        // A derived (coalesced) unit holds fewer records than sequences: it opens by its own rule.
        (derived.has(u.lane) ? openCoalescedPayload : openPayload)(this.ports.dataKey, u, u.payload);
        if (u.term > this.config.term || u.lastSeq >= (l.spec.firstSeq ?? 1))
          throw new CustodyError("reship_out_of_history", "recovered unit is not below this term's first sequence", {
            term: u.term,
            lastSeq: u.lastSeq,
          });
        this.ship(l, u, false);
        this.counters.inc("units_reshipped");
      } catch (err) {
        this.counters.inc(`reship_${err instanceof CustodyError ? err.code : "failed"}`);
      }
    }
  }
}
