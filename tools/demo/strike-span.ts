/**
 * The strike as a span in the run's span files (`spans/demo.jsonl`), beside the processes' own: a
 * unit's trace can then say which strike ended its custody, from the span files alone. Spans of
 * the struck processes stop at the strike; this one says when and whom it killed.
 */
import { join } from "node:path";
import { setupTracing, STRIKE_SPAN } from "../../actors/runtime/telemetry/index.ts";

/** What the strike did. */
export interface StrikeRecord {
  /** Wall-clock ms since the epoch: the first signal, and once every victim was gone. */
  readonly startMs: number;
  readonly endMs: number;
  readonly signal: string;
  readonly regions: readonly string[];
  /** Actor ids of the killed role processes, as their spans name them (`custody.actor`). */
  readonly actors: readonly string[];
  /** Process names (`holder-h-e1`, `writer-w1-vol-demo`). */
  readonly processes: readonly string[];
}

/** Appends the strike to `<runDir>/spans/demo.jsonl` as one `chaos.strike` span. */
export async function recordStrikeSpan(runDir: string, strike: StrikeRecord): Promise<void> {
  const tracing = setupTracing({
    serviceName: "custody-demo",
    attributes: { "custody.actor": "demo", "custody.role": "demo" },
    exporter: "jsonl",
    jsonlPath: join(runDir, "spans", "demo.jsonl"),
    registerGlobal: false,
  });
  const span = tracing.tracer.startSpan(STRIKE_SPAN, {
    startTime: strike.startMs,
    attributes: {
      "custody.signal": strike.signal,
      "custody.regions": [...strike.regions],
      "custody.killed": [...strike.actors],
      "custody.processes": [...strike.processes],
    },
  });
  span.end(strike.endMs);
  await tracing.shutdown();
}
