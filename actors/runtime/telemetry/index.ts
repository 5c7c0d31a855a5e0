// Public surface of actors/runtime/telemetry/: tracing setup and exporters, and reading a run's span files back
// (a unit's trace tree and fate: `custody trace`, the demo's report).
export * from "./tracing.ts";
export * from "./jsonl-span-exporter.ts";
export * from "./role-resource.ts";
export * from "./otel-packages.ts";
export {
  admitOutcome,
  buildTraceTree,
  readRunSpans,
  seqRange,
  startMs,
  traceRows,
  TraceQueryError,
  type TraceNode,
  type TraceTree,
} from "./trace-tree.ts";
export {
  pathOf,
  STRIKE_SPAN,
  strikeAfter,
  unitFate,
  type FateHolder,
  type FateStrike,
  type PathHolder,
  type UnitFate,
} from "./unit-fate.ts";
