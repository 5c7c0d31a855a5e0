/**
 * The OpenTelemetry SDK and exporter packages, loaded when first used instead of when a process
 * starts. Most processes never trace or serve metrics (every `custody` command but a `run` with a
 * span file or a metrics endpoint), yet loading these packages was about half of a `custody`
 * start's CPU (0.25 s of 0.55 s for `custody --help` on this machine), paid by every role process
 * and CLI call. Loaded with `require` (they are CommonJS packages; the same module instances a
 * static import gets), so the callers stay synchronous.
 */
import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

/** `@opentelemetry/core` (the W3C propagator, export result codes). */
export const otelCore = (): typeof import("@opentelemetry/core") => load("@opentelemetry/core");
/** `@opentelemetry/resources`. */
export const otelResources = (): typeof import("@opentelemetry/resources") => load("@opentelemetry/resources");
/** `@opentelemetry/sdk-trace-node` (tracer provider, span processors, in-memory exporter). */
export const otelTraceSdk = (): typeof import("@opentelemetry/sdk-trace-node") => load("@opentelemetry/sdk-trace-node");
/** `@opentelemetry/exporter-trace-otlp-http`. */
export const otelTraceOtlp = (): typeof import("@opentelemetry/exporter-trace-otlp-http") =>
  load("@opentelemetry/exporter-trace-otlp-http");
/** `@opentelemetry/sdk-metrics` (meter provider, periodic reader). */
export const otelMetricsSdk = (): typeof import("@opentelemetry/sdk-metrics") => load("@opentelemetry/sdk-metrics");
/** `@opentelemetry/exporter-prometheus`. */
export const otelPrometheus = (): typeof import("@opentelemetry/exporter-prometheus") =>
  load("@opentelemetry/exporter-prometheus");
/** `@opentelemetry/exporter-metrics-otlp-http`. */
export const otelMetricsOtlp = (): typeof import("@opentelemetry/exporter-metrics-otlp-http") =>
  load("@opentelemetry/exporter-metrics-otlp-http");
