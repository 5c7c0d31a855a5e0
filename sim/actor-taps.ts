import { receiptBatchSpec } from "../custody/index.ts";
import { decodeReceiptBatch } from "../custody/index.ts";
import { holderLaneKey } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { SENDER_HEADER, SENT_THROUGH_HEADER } from "../transport/index.ts";
import { creditSubject, receiptSubject, unitSubject } from "../transport/protocol/index.ts";
import { headerValue } from "../transport/index.ts";
import { creditSpec, decodeMessage } from "../transport/protocol/index.ts";
import type { CreditTruth, ReceiptTruth } from "./invariants.ts";
import type { HolderHost } from "./sim-host.ts";
import type { WorldSpec } from "./world.ts";

/**
 * What the holders and the writer say on the wire, as they say it: every receipt with what its
 * holder held when sending it, and per edge and sender life the bytes sent against the most the
 * receiver granted. The checks read these; the actors never see them.
 */
export class ActorTaps {
  private receipts: ReceiptTruth[] = [];
  private readonly sentBytes = new Map<string, { sender: string; gen: number; receiver: string; sent: number }>();
  private readonly grantedBytes = new Map<string, number>();
  private readonly senderGen = new Map<string, number>();

  constructor(
    private readonly spec: WorldSpec,
    private readonly hosts: ReadonlyMap<string, HolderHost>,
  ) {}

  /** A sender (holder or writer) starts a new life: its sent bytes are counted afresh. */
  newLife(sender: string): void {
    this.senderGen.set(sender, (this.senderGen.get(sender) ?? 0) + 1);
  }

  /** A message published by holder `h`. */
  holder(h: HolderHost, subject: string, data: Uint8Array, headers: Readonly<Record<string, string>>): void {
    const { volume, lane } = this.spec;
    if (subject === receiptSubject(volume, lane)) {
      const signed = decodeMessage(receiptBatchSpec, data);
      let claimed = RangeSet.EMPTY;
      for (const r of decodeReceiptBatch(signed.body).receipts) claimed = claimed.union(r.retained);
      const ob = h.holder?.lane(volume, lane);
      const held = ob === undefined ? RangeSet.EMPTY : ob.retained.subtract(ob.released);
      this.receipts.push({ holder: h.spec.id, claimed, held });
      return;
    }
    if (subject === creditSubject(h.spec.id, volume, lane)) {
      const g = decodeMessage(creditSpec, data);
      const k = `${g.sender}>${g.holder}`;
      this.grantedBytes.set(k, Math.max(this.grantedBytes.get(k) ?? 0, g.grantedThrough));
      return;
    }
    this.sender(h.spec.id, subject, headers);
  }

  /** A unit leaving `sender`: its cumulative sent bytes on that edge (checked against grants). */
  sender(sender: string, subject: string, headers: Readonly<Record<string, string>>): void {
    if (!subject.startsWith("custody.v1.unit.")) return;
    const sent = Number(headerValue(headers, SENT_THROUGH_HEADER) ?? NaN);
    if (!Number.isFinite(sent) || headerValue(headers, SENDER_HEADER) !== sender) return;
    for (const to of this.downstreamOf(sender)) {
      if (subject !== unitSubject(to, this.spec.volume, this.spec.lane)) continue;
      const gen = this.senderGen.get(sender) ?? 0;
      const k = `${sender}#${gen}>${to}`;
      const e = this.sentBytes.get(k);
      if (e === undefined) this.sentBytes.set(k, { sender, gen, receiver: to, sent });
      else e.sent = Math.max(e.sent, sent);
    }
  }

  private downstreamOf(id: string): readonly string[] {
    return id === this.spec.writer.id ? this.spec.writer.downstream : (this.hosts.get(id)?.spec.downstream ?? []);
  }

  /** Receipts sent since the last call, each with what its holder held when sending it. */
  takeReceipts(): ReceiptTruth[] {
    const r = this.receipts;
    this.receipts = [];
    return r;
  }

  /** Per edge and sender life: bytes sent vs the most the receiver granted that sender. */
  credits(): CreditTruth[] {
    const out: CreditTruth[] = [];
    for (const e of this.sentBytes.values()) {
      out.push({
        sender: e.sender,
        receiver: e.receiver,
        inc: e.gen,
        sent: e.sent,
        maxGranted: this.grantedBytes.get(`${e.sender}>${e.receiver}`) ?? 0,
      });
    }
    return out;
  }
}
