/**
 * W3C trace-context propagation over message headers (`traceparent` / `tracestate`), through the
 * OpenTelemetry propagation API. The carrier is a plain `Record<string, string>`, so the same code
 * serves NATS headers and the simulated transport. Which propagator runs is whatever the process
 * registered globally (`actors/runtime/telemetry/setupTracing` registers the W3C one); without a registered SDK
 * these functions are harmless no-ops.
 */
import {
  context as otelContext,
  propagation,
  trace,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from "@opentelemetry/api";
import { headerValue, type InboundMessage, type MessageHeaders } from "./transport.ts";

/** Reads headers case-insensitively: NATS keeps header names as sent, W3C names are lowercase. */
export const headersGetter: TextMapGetter<MessageHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => headerValue(carrier, key),
};

/** Writes into a mutable header record. */
export const headersSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/**
 * Writes the trace context of `ctx` (default: the active context) into `headers`, in place.
 * Returns the same object. Adds nothing when there is no recording span or no propagator.
 */
export function injectTraceContext(
  headers: Record<string, string>,
  ctx: Context = otelContext.active(),
): Record<string, string> {
  propagation.inject(ctx, headers, headersSetter);
  return headers;
}

/** Returns a Context carrying the remote span found in `headers` (or the root context if none). */
export function extractTraceContext(headers: MessageHeaders, base: Context = otelContext.active()): Context {
  return propagation.extract(base, headers, headersGetter);
}

/**
 * Copy of `headers` plus the active trace context. A `traceparent` the caller set explicitly wins,
 * so a relay can forward the original sender's context unchanged.
 */
export function withTraceHeaders(
  headers: MessageHeaders | undefined,
  ctx: Context = otelContext.active(),
): Record<string, string> {
  const out: Record<string, string> = { ...headers };
  if (headerValue(out, "traceparent") !== undefined) return out;
  return injectTraceContext(out, ctx);
}

/**
 * Starts a CONSUMER span for a received message whose parent is the sender's span (from the
 * message headers). The caller ends it. Use `trace.setSpan(context.active(), span)` with
 * `context.with` to make it active, or use `withConsumerSpan`.
 */
export function startConsumerSpan(
  tracer: Tracer,
  name: string,
  msg: Pick<InboundMessage, "subject" | "headers">,
): Span {
  // Extract onto ROOT, not the active context: the receiver's own ambient context must not
  // become the parent of a message that came from elsewhere.
  const parent = extractTraceContext(msg.headers, ROOT_CONTEXT);
  return tracer.startSpan(
    name,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.system": "nats",
        "messaging.destination.name": msg.subject,
        "messaging.operation.type": "process",
      },
    },
    parent,
  );
}

/**
 * Runs `fn` inside a consumer span for `msg` (active while `fn` runs), ends the span when `fn`
 * settles, records an exception and error status if it throws, and returns `fn`'s result.
 */
export async function withConsumerSpan<T>(
  tracer: Tracer,
  name: string,
  msg: InboundMessage,
  fn: (span: Span) => T | Promise<T>,
): Promise<T> {
  const span = startConsumerSpan(tracer, name, msg);
  try {
    return await otelContext.with(trace.setSpan(otelContext.active(), span), () => fn(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message ?? String(err) });
    throw err;
  } finally {
    span.end();
  }
}
