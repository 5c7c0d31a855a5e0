/**
 * Process-wide tracing setup: one tracer provider with service/resource attributes, the W3C
 * trace-context propagator (what `transport/trace-context.ts` uses to fill NATS headers) and an
 * AsyncLocalStorage context manager (the default of `NodeTracerProvider.register`), so the active
 * span follows async code.
 */
import { context, propagation, trace, type Attributes, type Tracer } from "@opentelemetry/api";
import type { InMemorySpanExporter, NodeTracerProvider, SpanProcessor } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { CustodyError } from "../../../core/index.ts";
import { JsonlSpanExporter } from "./jsonl-span-exporter.ts";
import { otelCore, otelResources, otelTraceOtlp, otelTraceSdk } from "./otel-packages.ts";

/** Where finished spans go. */
export const SpanExporterKind = {
  /** In-memory, synchronous (tests read `memoryExporter.getFinishedSpans()`). */
  Memory: "memory",
  /** One JSON object per line in `jsonlPath`. */
  Jsonl: "jsonl",
  /** OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`). */
  Otlp: "otlp",
  None: "none",
} as const;
export type SpanExporterKind = (typeof SpanExporterKind)[keyof typeof SpanExporterKind];

/**
 * How often finished spans are appended to a JSON-lines file. A SIGKILLed process loses what it had
 * not appended yet: with OpenTelemetry's default (5 s) a struck process's last seconds were missing,
 * so a write lost in the strike had no spans to trace.
 */
const JSONL_EXPORT_DELAY_MS = 200;

/** Options of `setupTracing`. */
export interface TracingOptions {
  serviceName: string;
  /** `service.instance.id`, e.g. a role process's id (absent: not set). */
  serviceInstanceId?: string;
  /** Extra resource attributes, e.g. `{ "custody.region": "us-east", "custody.holder": "h1" }`. */
  attributes?: Attributes;
  /** Default: `otlp` when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else `none`. A list enables several. */
  exporter?: SpanExporterKind | SpanExporterKind[];
  /** Required for `jsonl`. */
  jsonlPath?: string;
  /** OTLP/HTTP traces URL (e.g. `http://collector:4318/v1/traces`); default: from the environment. */
  otlpUrl?: string;
  /** Register as the global provider/propagator/context manager (default true). */
  registerGlobal?: boolean;
}

/** What `setupTracing` returns; `tracer` works even when global registration is off. */
export interface TracingHandle {
  provider: NodeTracerProvider;
  tracer: Tracer;
  /** Present when the `memory` exporter is enabled. */
  memoryExporter?: InMemorySpanExporter;
  /** Present when the `jsonl` exporter is enabled. */
  jsonlExporter?: JsonlSpanExporter;
  /** Flushes and stops every exporter and unregisters the globals this call registered. Idempotent. */
  shutdown(): Promise<void>;
}

/** True when the environment asks for OTLP export. */
export function otlpEndpointConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env["OTEL_EXPORTER_OTLP_ENDPOINT"] || env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]);
}

/**
 * Builds and (by default) globally registers a tracer provider. Throws CustodyError
 * `invalid_tracing_config` if `jsonl` is requested without `jsonlPath`. Only one global registration
 * per process is effective at a time: call `shutdown()` before setting up again.
 */
export function setupTracing(opts: TracingOptions): TracingHandle {
  const kinds = new Set<SpanExporterKind>(
    opts.exporter === undefined
      ? [otlpEndpointConfigured() ? SpanExporterKind.Otlp : SpanExporterKind.None]
      : Array.isArray(opts.exporter)
        ? opts.exporter
        : [opts.exporter],
  );
  const { BatchSpanProcessor, InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } = otelTraceSdk();
  const { defaultResource, resourceFromAttributes } = otelResources();
  const processors: SpanProcessor[] = [];
  const handle: Partial<TracingHandle> = {};
  if (kinds.has(SpanExporterKind.Memory)) {
    handle.memoryExporter = new InMemorySpanExporter();
    // Simple (synchronous) processor: a span is readable the moment it ends.
    processors.push(new SimpleSpanProcessor(handle.memoryExporter));
  }
  if (kinds.has(SpanExporterKind.Jsonl)) {
    if (!opts.jsonlPath) {
      throw new CustodyError("invalid_tracing_config", "setupTracing: exporter 'jsonl' needs jsonlPath", {
        exporter: "jsonl",
      });
    }
    handle.jsonlExporter = new JsonlSpanExporter(opts.jsonlPath);
    processors.push(new BatchSpanProcessor(handle.jsonlExporter, { scheduledDelayMillis: JSONL_EXPORT_DELAY_MS }));
  }
  if (kinds.has(SpanExporterKind.Otlp)) {
    // Without a URL the exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and headers from the environment.
    processors.push(
      new BatchSpanProcessor(new (otelTraceOtlp().OTLPTraceExporter)(opts.otlpUrl ? { url: opts.otlpUrl } : {})),
    );
  }

  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({
        ...opts.attributes,
        [ATTR_SERVICE_NAME]: opts.serviceName,
        ...(opts.serviceInstanceId === undefined ? {} : { [ATTR_SERVICE_INSTANCE_ID]: opts.serviceInstanceId }),
      }),
    ),
    spanProcessors: processors,
  });
  const registerGlobal = opts.registerGlobal ?? true;
  if (registerGlobal) provider.register({ propagator: new (otelCore().W3CTraceContextPropagator)() });

  let done: Promise<void> | undefined;
  const result: TracingHandle = {
    ...handle,
    provider,
    tracer: provider.getTracer(opts.serviceName),
    shutdown: () =>
      (done ??= provider.shutdown().finally(() => {
        if (!registerGlobal) return;
        trace.disable();
        propagation.disable();
        context.disable();
      })),
  };
  return result;
}
