import { ROOT_CONTEXT, SpanKind, trace, type Link } from "@opentelemetry/api";
import { receiptBatchSpec } from "../../custody/index.ts";
import { makeReceiptBatch, signReceiptBatch } from "../../custody/index.ts";
import { receiptSubject } from "../../transport/protocol/index.ts";
import { injectTraceContext } from "../../transport/index.ts";
import { encodeMessage } from "../../transport/protocol/index.ts";
import type { ProtectedRamEvidence } from "./holder-config.ts";
import type { HolderContext } from "./holder-context.ts";
import { ReceiptBatcher } from "./receipt-batcher.ts";
import { laneReceipts } from "./receipt-content.ts";

/**
 * The holder's signed receipt batches: each admitted unit is noted for its lane's next batch,
 * which goes out when full, when its maximum delay passed (`timer.receipts` back through the
 * actor), or at once when asked. A published batch states the lane's whole retained custody
 * (`laneReceipts`), with a span linked to the admit spans of the units it covers.
 */
export class ReceiptPublisher {
  private readonly batcher: ReceiptBatcher<Link>;
  /** A `timer.receipts` is pending (one at a time). */
  private armed = false;

  constructor(
    private readonly h: HolderContext,
    /** The protected-RAM evidence receipts may state now (undefined: none usable). */
    private readonly protectedEvidence: () => ProtectedRamEvidence | undefined,
  ) {
    this.batcher = new ReceiptBatcher<Link>(h.config.receipts);
  }

  /** Notes an admitted (or re-announced) unit; publishes a full batch, else arms the delay timer. */
  noteAdmitted(key: string, link?: Link): void {
    const full = this.batcher.noteAdmitted(key, this.h.ports.clock.now(), link);
    if (full) {
      this.publish(key);
      return;
    }
    if (!this.armed) this.arm(this.h.config.receipts.maxDelayMs);
  }

  /**
   * On `timer.receipts`: publishes every batch that is full or past its maximum delay; re-arms the timer for the rest.
   */
  flushDue(): void {
    this.armed = false;
    const now = this.h.ports.clock.now();
    for (const key of this.batcher.due(now)) this.publish(key);
    const next = this.batcher.nextDeadline();
    if (next !== undefined && !this.armed) this.arm(Math.max(0, next - now));
  }

  /** Drops the lane's pending batch; true when there was one (its units are to be receipted now). */
  takePending(key: string): boolean {
    return this.batcher.take(key) !== undefined;
  }

  /** Publishes the lane's receipt at once. */
  publishNow(key: string): void {
    this.batcher.noteAdmitted(key, this.h.ports.clock.now());
    this.publish(key);
  }

  /** Signs and publishes the lane's receipt batch. */
  publish(key: string): void {
    const h = this.h;
    const hl = h.lanes.get(key);
    if (hl === undefined) return;
    const taken = this.batcher.take(key);
    // Receipt times are whole milliseconds on the wire (a fractional time, as a simulated clock
    // gives, made the batch malformed for every reader: sim seeds 5, 10, 19 lost 1,444 receipts).
    const now = Math.floor(h.ports.clock.now());
    const receipts = laneReceipts(hl, h.config, now, this.protectedEvidence());
    if (receipts.length === 0) return;
    const span = h.tracer.startSpan("holder.receipt", {
      kind: SpanKind.PRODUCER,
      links: taken?.links ?? [],
      attributes: { "custody.lane": key, "custody.units": taken?.units ?? 0 },
    });
    try {
      const subject = receiptSubject(hl.volume, hl.lane);
      const holder = { holderId: h.config.holderId, incarnation: h.config.incarnation };
      const batch = makeReceiptBatch({ volume: hl.volume, lane: hl.lane, subject }, holder, now, receipts);
      const signed = signReceiptBatch(batch, h.ports.privateKey);
      h.ports.transport.publish(
        subject,
        encodeMessage(receiptBatchSpec, { body: signed.body, signature: signed.signature }),
        {
          headers: injectTraceContext({}, trace.setSpan(ROOT_CONTEXT, span)),
        },
      );
      for (const r of receipts)
        h.observe({
          type: "receipt_published",
          lane: key,
          residency: r.residency.kind,
          retained: r.retained.toString(),
        });
    } finally {
      span.end();
    }
  }

  private arm(ms: number): void {
    this.armed = true;
    this.h.later(ms, { type: "timer.receipts" });
  }
}
