import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import {
  otlpEndpointConfigured,
  roleServiceName,
  setupTracing,
  SpanExporterKind,
  type TracingHandle,
} from "./telemetry/index.ts";

/**
 * The optional `spanFile` of a role config: the process's spans go to that file as JSON lines
 * (actors/runtime/telemetry/jsonl-span-exporter.ts), for a demo's trace view or offline inspection; also over
 * OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
 */
export const spanFileSchema = z.string().min(1).optional();

/** How often spans are flushed to the file, so a SIGKILLed process still leaves what it did before (ms). */
const FLUSH_MS = 250;

/** Tracing of a role process; `stop` flushes and closes the file. A no-op without a span file. */
export interface RoleTracing {
  stop(): Promise<void>;
}

/**
 * Registers a global tracer provider writing to `spanFile` (the actors' tracers are the global
 * ones), with the role and id as resource attributes (`service.name` `custody-<role>`,
 * `service.instance.id` the id: actors/runtime/telemetry/role-resource.ts). Without a span file nothing is registered.
 */
export function startRoleTracing(
  spanFile: string | undefined,
  role: string,
  id: string,
  attributes: Record<string, string> = {},
): RoleTracing {
  if (spanFile === undefined) return { stop: async () => undefined };
  mkdirSync(dirname(spanFile), { recursive: true });
  const handle: TracingHandle = setupTracing({
    serviceName: roleServiceName(role),
    serviceInstanceId: id,
    attributes: { "custody.actor": id, "custody.role": role, ...attributes },
    exporter: otlpEndpointConfigured() ? [SpanExporterKind.Jsonl, SpanExporterKind.Otlp] : SpanExporterKind.Jsonl,
    jsonlPath: spanFile,
  });
  const timer = setInterval(() => void handle.provider.forceFlush().catch(() => undefined), FLUSH_MS);
  return {
    async stop() {
      clearInterval(timer);
      await handle.shutdown().catch(() => undefined);
    },
  };
}
