// Public surface of telemetry/: tracing setup and exporters.
export * from "./tracing.ts";
export * from "./jsonl-span-exporter.ts";
export * from "./role-resource.ts";
export * from "./otel-packages.ts";
