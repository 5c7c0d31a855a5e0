import type { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { otelMetricsOtlp, otelMetricsSdk } from "./telemetry/index.ts";

/** Where a role pushes its metrics over OTLP/HTTP, and how often. */
export interface OtlpMetricsOptions {
  /** The collector's metrics URL, e.g. `http://collector:4318/v1/metrics`. */
  readonly url: string;
  /** Milliseconds between exports (default 10,000). */
  readonly intervalMs?: number;
}

/** How long one export may take before it counts as failed. */
const EXPORT_TIMEOUT_MS = 5_000;

/**
 * A reader that pushes every `intervalMs` (and once more at shutdown) with OpenTelemetry's own
 * OTLP/HTTP metrics exporter. A failed export is logged through OpenTelemetry's diagnostics and the
 * next interval sends cumulative values again, so a collector that was down misses nothing.
 */
export function otlpMetricReader(opts: OtlpMetricsOptions): PeriodicExportingMetricReader {
  const interval = opts.intervalMs ?? 10_000;
  const timeout = Math.min(interval, EXPORT_TIMEOUT_MS);
  return new (otelMetricsSdk().PeriodicExportingMetricReader)({
    exporter: new (otelMetricsOtlp().OTLPMetricExporter)({ url: opts.url, timeoutMillis: timeout }),
    exportIntervalMillis: interval,
    exportTimeoutMillis: timeout,
  });
}
