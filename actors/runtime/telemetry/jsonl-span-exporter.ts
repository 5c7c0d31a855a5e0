/**
 * A span exporter that appends one JSON object per span to a file, for offline inspection
 * (`jq`, grep, a test). Lines are written in export order; each line is self-contained.
 */
import { appendFile } from "node:fs/promises";
import { SpanKind, type HrTime } from "@opentelemetry/api";
import type { ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { otelCore } from "./otel-packages.ts";

/** The shape of one line of a JSONL trace file. */
export interface JsonlSpanRecord {
  traceId: string;
  spanId: string;
  /** Absent for a root span. */
  parentSpanId?: string;
  name: string;
  kind: string;
  /** ISO-8601 wall time (millisecond precision). */
  startTime: string;
  endTime: string;
  /** Exact nanoseconds since the epoch, as a decimal string (too big for a JS number). */
  startUnixNano: string;
  endUnixNano: string;
  durationMs: number;
  status: { code: number; message?: string };
  attributes: Record<string, unknown>;
  events: Array<{ name: string; time: string; attributes: Record<string, unknown> }>;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>;
  resource: Record<string, unknown>;
}

const hrToNano = (t: HrTime): bigint => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
const hrToIso = (t: HrTime): string => new Date(t[0] * 1000 + Math.floor(t[1] / 1e6)).toISOString();

/** Converts a finished span to its JSONL record (pure). */
export function spanToJsonlRecord(span: ReadableSpan): JsonlSpanRecord {
  const ctx = span.spanContext();
  const record: JsonlSpanRecord = {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    name: span.name,
    kind: SpanKind[span.kind] ?? String(span.kind),
    startTime: hrToIso(span.startTime),
    endTime: hrToIso(span.endTime),
    startUnixNano: hrToNano(span.startTime).toString(),
    endUnixNano: hrToNano(span.endTime).toString(),
    durationMs: Number(hrToNano(span.endTime) - hrToNano(span.startTime)) / 1e6,
    status:
      span.status.message === undefined
        ? { code: span.status.code }
        : { code: span.status.code, message: span.status.message },
    attributes: { ...span.attributes },
    events: span.events.map((e) => ({ name: e.name, time: hrToIso(e.time), attributes: { ...e.attributes } })),
    links: span.links.map((l) => ({
      traceId: l.context.traceId,
      spanId: l.context.spanId,
      attributes: { ...l.attributes },
    })),
    resource: { ...span.resource.attributes },
  };
  if (span.parentSpanContext) record.parentSpanId = span.parentSpanContext.spanId;
  return record;
}

/** Appends spans to `path` as JSON lines. After `shutdown`, exports fail instead of writing. */
export class JsonlSpanExporter implements SpanExporter {
  readonly path: string;
  #pending: Promise<void> = Promise.resolve();
  #shutdown = false;

  constructor(path: string) {
    this.path = path;
  }

  /** Writes the batch as one append; reports FAILED (with the error) if the write fails. */
  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.#shutdown) {
      resultCallback({ code: otelCore().ExportResultCode.FAILED, error: new Error("JsonlSpanExporter is shut down") });
      return;
    }
    const text = spans.map((s) => JSON.stringify(spanToJsonlRecord(s)) + "\n").join("");
    // Chain writes so batches land in export order.
    this.#pending = this.#pending.then(() =>
      appendFile(this.path, text).then(
        () => resultCallback({ code: otelCore().ExportResultCode.SUCCESS }),
        (error: Error) => resultCallback({ code: otelCore().ExportResultCode.FAILED, error }),
      ),
    );
  }

  /** Resolves once every accepted batch is on its way to the file (written or failed). */
  forceFlush(): Promise<void> {
    return this.#pending;
  }

  shutdown(): Promise<void> {
    this.#shutdown = true;
    return this.#pending;
  }
}
