import { context, ROOT_CONTEXT, trace, type SpanContext } from "@opentelemetry/api";
import { readUnitMessage, unitDestination, type Transport } from "../../transport/index.ts";

/**
 * Why: a writer ships a write's unit only after its outbox made the unit durable (and its credit
 * allows), so the send runs outside the `writer.write` span that produced it. To keep one causal
 * tree per write (write → link.send → holder.admit …), the writer process remembers each traced
 * write's span by lane sequence, and its sending transport publishes each unit with the span of
 * the write its first sequence came from as the active context.
 */

/** At most this many writes are remembered (the newest); a unit shipped later gets no parent. */
const MAX_WRITES = 4096;

/** The spans of recent writes, by lane and sequence. */
export class WriteSpans {
  private readonly spans = new Map<string, SpanContext>();

  /** Remembers that sequence `seq` of `lane` was written under span `span`. */
  note(lane: string, seq: number, span: SpanContext): void {
    this.spans.set(`${lane}:${seq}`, span);
    if (this.spans.size > MAX_WRITES) this.spans.delete(this.spans.keys().next().value!);
  }

  /** The span sequence `seq` of `lane` was written under, if remembered. */
  of(lane: string, seq: number): SpanContext | undefined {
    return this.spans.get(`${lane}:${seq}`);
  }
}

/**
 * `inner` (the writer's shaped or plain transport) publishing each unit in the context of the
 * write its first sequence came from; everything else passes unchanged.
 */
export function publishingInWriteSpans(inner: Transport, spans: WriteSpans): Transport {
  const spanOf = (
    subject: string,
    data: Uint8Array,
    headers: Record<string, string> | undefined,
  ): SpanContext | undefined => {
    if (unitDestination(subject) === undefined) return undefined;
    try {
      const m = readUnitMessage({ data, headers: headers ?? {} }, undefined);
      const u = m.kind === "units" ? m.units[0]?.unit : undefined;
      return u === undefined ? undefined : spans.of(u.lane, u.firstSeq);
    } catch {
      return undefined;
    }
  };
  return {
    get name() {
      return inner.name;
    },
    publish(subject, data, opts) {
      const span = spanOf(subject, data, opts?.headers as Record<string, string> | undefined);
      if (span === undefined) return inner.publish(subject, data, opts);
      context.with(trace.setSpanContext(ROOT_CONTEXT, span), () => inner.publish(subject, data, opts));
    },
    subscribe: (subject, handler, opts) => inner.subscribe(subject, handler, opts),
    request: (subject, data, opts) => inner.request(subject, data, opts),
    respond: (msg, data, opts) => inner.respond(msg, data, opts),
    flush: () => inner.flush(),
    maxPayloadBytes: () => inner.maxPayloadBytes?.(),
    close: () => inner.close(),
    ...(inner.onConnection !== undefined
      ? { onConnection: (l: Parameters<NonNullable<Transport["onConnection"]>>[0]) => inner.onConnection!(l) }
      : {}),
  };
}
