import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
// Installed with @opentelemetry/exporter-trace-otlp-http at the same version; the metrics OTLP exporter package is not installed.
import { JsonMetricsSerializer } from "@opentelemetry/otlp-transformer";
import { PeriodicExportingMetricReader, type PushMetricExporter, type ResourceMetrics } from "@opentelemetry/sdk-metrics";

/** Where a role pushes its metrics over OTLP/HTTP (JSON), and how often. */
export interface OtlpMetricsOptions {
  /** The collector's metrics URL, e.g. `http://collector:4318/v1/metrics`. */
  readonly url: string;
  /** Milliseconds between exports (default 10,000). */
  readonly intervalMs?: number;
}

/** How long one export may take before it counts as failed. */
const EXPORT_TIMEOUT_MS = 5_000;

/**
 * An OTLP/HTTP metrics exporter: each collection is encoded by OpenTelemetry's OTLP JSON
 * serializer and POSTed to `url`. A failed POST is reported to the reader (which logs it through
 * the OpenTelemetry diagnostics) and the next interval tries again with cumulative values.
 */
export class OtlpHttpJsonMetricExporter implements PushMetricExporter {
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly url: string) {}

  export(metrics: ResourceMetrics, done: (result: ExportResult) => void): void {
    if (this.stopped) return done({ code: ExportResultCode.FAILED, error: new Error("exporter shut down") });
    const body = JsonMetricsSerializer.serializeRequest(metrics);
    if (body === undefined) return done({ code: ExportResultCode.FAILED, error: new Error("metrics did not serialize") });
    const p = fetch(this.url, { method: "POST", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(EXPORT_TIMEOUT_MS) }).then(
      async (res) => {
        await res.arrayBuffer();
        done(res.ok ? { code: ExportResultCode.SUCCESS } : { code: ExportResultCode.FAILED, error: new Error(`OTLP metrics export: HTTP ${res.status}`) });
      },
      (error: unknown) => done({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) }),
    );
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  async forceFlush(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.stopped = true;
  }
}

/** A reader that pushes every `intervalMs` to the OTLP endpoint (and once more at shutdown). */
export function otlpMetricReader(opts: OtlpMetricsOptions): PeriodicExportingMetricReader {
  const interval = opts.intervalMs ?? 10_000;
  return new PeriodicExportingMetricReader({ exporter: new OtlpHttpJsonMetricExporter(opts.url), exportIntervalMillis: interval, exportTimeoutMillis: Math.min(interval, EXPORT_TIMEOUT_MS) });
}
