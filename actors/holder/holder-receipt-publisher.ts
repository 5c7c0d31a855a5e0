import { ROOT_CONTEXT, SpanKind, trace, type Link } from "@opentelemetry/api";
import { CustodyError } from "../../core/index.ts";
import { receiptBatchSpec } from "../../custody/index.ts";
import { makeReceiptBatch, signReceiptBatch } from "../../custody/index.ts";
import { receiptSubject } from "../../transport/protocol/index.ts";
import { injectTraceContext } from "../../transport/index.ts";
import { encodeMessage } from "../../transport/protocol/index.ts";
import type { ProtectedRamEvidence } from "./holder-config.ts";
import type { HolderContext } from "./holder-context.ts";
import type { BaseSnapshotRef, HolderPlainState, ReceiptBatches, ReceiptLink } from "./holder-state.ts";
import { noteAdmitted, takeBatch } from "./receipt-batches.ts";
import { laneReceipts } from "./receipt-content.ts";

/** A span link as plain fields (what the machine keeps in its receipt batches). */
export function receiptLinkOf(link: Link): ReceiptLink {
  const c = link.context;
  return { traceId: c.traceId, spanId: c.spanId, traceFlags: c.traceFlags, isRemote: c.isRemote };
}

/**
 * Signs and publishes `key`'s receipt batch now: it states the lane's whole retained custody
 * (`laneReceipts`), with a span linked to the admit spans of the `units` it covers. Nothing is
 * published for a lane that retains nothing.
 */
export function publishLaneReceipt(
  h: HolderContext,
  key: string,
  covered: { readonly units: number; readonly links: readonly ReceiptLink[] },
  protectedEvidence: ProtectedRamEvidence | undefined,
  base: BaseSnapshotRef | undefined,
): void {
  const hl = h.lanes.get(key);
  if (hl === undefined) return;
  // Receipt times are whole milliseconds on the wire (a fractional time, as a simulated clock
  // gives, made the batch malformed for every reader: sim seeds 5, 10, 19 lost 1,444 receipts).
  const now = Math.floor(h.ports.clock.now());
  const receipts = laneReceipts(hl, h.config, now, protectedEvidence, base);
  if (receipts.length === 0) return;
  const span = h.tracer.startSpan("holder.receipt", {
    kind: SpanKind.PRODUCER,
    links: covered.links.map((context) => ({ context })),
    attributes: { "custody.lane": key, "custody.units": covered.units },
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
      h.observe({ type: "receipt_published", lane: key, residency: r.residency.kind, retained: r.retained.toString() });
  } finally {
    span.end();
  }
}

/** Thrown when the lane runtime touches receipt batches outside an event of the holder machine. */
export class ReceiptDeskClosedError extends CustodyError {
  constructor(op: string) {
    super("receipt_desk_closed", `receipt batches touched outside a holder event (${op})`, { op });
  }
}

/**
 * The lane runtime's window onto the machine's receipt batches while it handles one event. The
 * executor opens it with the batches in the machine's context, the runtime notes admitted units,
 * takes or publishes batches (a receipt must go out before the units it covers are released, so
 * publication cannot wait for the event's end), and the executor assigns what `close` returns. The
 * batches change only through the pure functions of receipt-batches.ts.
 */
export class ReceiptDesk {
  private batches: ReceiptBatches | undefined;
  /** The machine's lanes for the event (the base snapshot each lane's receipts name). */
  private lanes: HolderPlainState["lanes"] = {};

  constructor(
    private readonly h: HolderContext,
    /** The protected-RAM evidence receipts may state now (undefined: none usable). */
    private readonly protectedEvidence: () => ProtectedRamEvidence | undefined,
  ) {}

  open(state: Pick<HolderPlainState, "receipts" | "lanes">): void {
    this.batches = state.receipts;
    this.lanes = state.lanes;
  }

  /** The batches as the event left them; the desk is closed until the next `open`. */
  close(): ReceiptBatches {
    const b = this.current("close");
    this.batches = undefined;
    return b;
  }

  /** Notes an admitted (or re-announced) unit; publishes a full batch, else arms the delay timer. */
  noteAdmitted(key: string, link?: Link): void {
    const policy = this.h.config.receipts;
    const r = noteAdmitted(this.current("note"), policy, key, this.h.ports.clock.now(), link && receiptLinkOf(link));
    this.batches = r.batches;
    if (r.full) return this.publish(key);
    if (this.batches.armed) return;
    this.batches = { ...this.batches, armed: true };
    this.h.later(policy.maxDelayMs, { type: "timer.receipts" });
  }

  /** Drops the lane's pending batch; true when there was one (its units are to be receipted now). */
  takePending(key: string): boolean {
    const r = takeBatch(this.current("take"), key);
    this.batches = r.batches;
    return r.taken !== undefined;
  }

  /** Publishes the lane's receipt at once. */
  publishNow(key: string): void {
    this.batches = noteAdmitted(this.current("now"), this.h.config.receipts, key, this.h.ports.clock.now()).batches;
    this.publish(key);
  }

  /** Signs and publishes the lane's receipt batch. */
  publish(key: string): void {
    if (!this.h.lanes.has(key)) return;
    const r = takeBatch(this.current("publish"), key);
    this.batches = r.batches;
    publishLaneReceipt(
      this.h,
      key,
      r.taken ?? { units: 0, links: [] },
      this.protectedEvidence(),
      this.lanes[key]?.base,
    );
  }

  private current(op: string): ReceiptBatches {
    if (this.batches === undefined) throw new ReceiptDeskClosedError(op);
    return this.batches;
  }
}
