import type { Meter } from "@opentelemetry/api";
import type { MeterProvider } from "@opentelemetry/sdk-metrics";
import type { VolumeStatus } from "../../transport/protocol/index.ts";
import { otelMetricsSdk, otelPrometheus, roleResource } from "./telemetry/index.ts";
import type { HolderMetrics } from "./metrics-holder.ts";
import { otlpMetricReader, type OtlpMetricsOptions } from "./metrics-otlp.ts";
import { registerRepairMetrics, registerRepairWorkerMetrics } from "./metrics-repair.ts";

/** What a role process exposes: its counters, and for a controller the newest status document. */
export interface MetricsSource {
  readonly role: string;
  readonly id: string;
  counters(): Readonly<Record<string, number>>;
  status?(): VolumeStatus | undefined;
  /** A holder's custody, credit, rejection and receipt-latency figures (see metrics-holder.ts). */
  holder?: HolderMetrics;
  /** A repair worker: the repair tasks it runs now. */
  repairsRunning?(): number;
}

/** Where a role serves `/metrics` (loopback by default) and/or pushes its metrics over OTLP/HTTP. */
export interface MetricsOptions {
  readonly port?: number | undefined;
  readonly host?: string | undefined;
  readonly otlp?: OtlpMetricsOptions | undefined;
}

/** A running `/metrics` endpoint (and OTLP push). */
export interface MetricsEndpoint {
  /** The scrape URL; absent when only OTLP export is configured. */
  readonly url: string | undefined;
  close(): Promise<void>;
}

/** Per scenario of the newest status document: the loss it would suffer now, its verdict and recovery time. */
function registerScenarioGauges(meter: Meter, status: () => VolumeStatus | undefined): void {
  const perScenario = (
    name: string,
    description: string,
    unit: string,
    value: (s: VolumeStatus["scenarios"][number]) => number | null,
  ) =>
    meter.createObservableGauge(name, { description, unit }).addCallback((r) => {
      const doc = status();
      if (doc === undefined) return;
      for (const s of doc.scenarios) {
        const v = value(s);
        if (v !== null) r.observe(v, { volume: doc.volume, scenario: s.name, required: String(s.required) });
      }
    });
  perScenario(
    "custody_scenario_rpo_seconds",
    "age of the oldest acknowledged write the scenario would lose now (0: none)",
    "s",
    (s) => (s.lostSeqs === 0 ? 0 : s.oldestLostAgeMs / 1000),
  );
  perScenario(
    "custody_scenario_lost_bytes",
    "acknowledged bytes the scenario would lose now",
    "By",
    (s) => s.lostBytes,
  );
  perScenario(
    "custody_scenario_lost_seqs",
    "acknowledged sequences the scenario would lose now",
    "1",
    (s) => s.lostSeqs,
  );
  perScenario(
    "custody_scenario_in_flight_seqs",
    "of the writes the scenario would lose now, those still within their receipt deadline",
    "1",
    (s) => s.inFlightSeqs ?? null,
  );
  perScenario(
    "custody_scenario_overdue_seqs",
    "of the writes the scenario would lose now, those past their receipt deadline (lost)",
    "1",
    (s) => s.overdueSeqs ?? null,
  );
  perScenario(
    "custody_scenario_met",
    "1 when the scenario's verdict is met (a loss counts once past its receipt deadline and grace)",
    "1",
    (s) => (s.verdict === undefined ? null : s.verdict === "met" ? 1 : 0),
  );
  perScenario(
    "custody_scenario_rto_seconds",
    "time to a usable volume at the scenario's destination (absent: unbounded)",
    "s",
    (s) => s.rtoSec,
  );
}

/** A controller's figures from its newest status document: scenarios, repairs, acknowledged heads, evidence ages. */
function registerStatusMetrics(meter: Meter, status: () => VolumeStatus | undefined): void {
  registerScenarioGauges(meter, status);
  registerRepairMetrics(meter, status);
  meter
    .createObservableGauge("custody_acknowledged_seq", {
      description: "highest acknowledged sequence per lane",
      unit: "1",
    })
    .addCallback((r) => {
      const doc = status();
      if (doc !== undefined) for (const [lane, seq] of doc.acknowledged) r.observe(seq, { volume: doc.volume, lane });
    });
  meter
    .createObservableGauge("custody_evidence_age_seconds", {
      description: "age of each holder's newest receipt",
      unit: "s",
    })
    .addCallback((r) => {
      const doc = status();
      if (doc !== undefined)
        for (const e of doc.evidence) r.observe(e.ageMs / 1000, { volume: doc.volume, holder: e.holder });
    });
}

/**
 * Serves a role's figures in the Prometheus text format through OpenTelemetry's Prometheus
 * exporter. Every counter of the role is `custody_events_total{role,id,event}`; a controller adds,
 * per scenario of its newest status document, the loss it would suffer now
 * (`custody_scenario_rpo_seconds` — age of the oldest acknowledged write it would lose —,
 * `custody_scenario_lost_seqs`, split into `custody_scenario_in_flight_seqs` and
 * `custody_scenario_overdue_seqs`), whether its verdict is met (`custody_scenario_met`), its recovery
 * time (`custody_scenario_rto_seconds`, absent when unbounded), the acknowledged head per lane and
 * each holder's evidence age. Values are read at scrape time; with `otlp` the same instruments are
 * also pushed every interval (and once at close) to an OTLP/HTTP collector.
 */
export async function serveMetrics(source: MetricsSource, opts: MetricsOptions): Promise<MetricsEndpoint> {
  const host = opts.host ?? "127.0.0.1";
  const readers: NonNullable<NonNullable<ConstructorParameters<typeof MeterProvider>[0]>["readers"]>[number][] = [];
  if (opts.port !== undefined) {
    const exporter = new (otelPrometheus().PrometheusExporter)({ host, port: opts.port, preventServerStart: true });
    await exporter.startServer();
    readers.push(exporter);
  }
  if (opts.otlp !== undefined) readers.push(otlpMetricReader(opts.otlp));
  // Named like the process's traces: `service.name` custody-<role>, `service.instance.id` its id.
  const provider = new (otelMetricsSdk().MeterProvider)({ readers, resource: roleResource(source.role, source.id) });
  const meter = provider.getMeter("custody");
  const who = { role: source.role, id: source.id };

  meter
    .createObservableCounter("custody_events", {
      description: "role counters (admissions, rejections by code, releases, ...)",
    })
    .addCallback((r) => {
      for (const [event, n] of Object.entries(source.counters())) r.observe(n, { ...who, event });
    });
  source.holder?.register(meter, source.id);
  if (source.repairsRunning !== undefined)
    registerRepairWorkerMetrics(meter, source.id, source.repairsRunning.bind(source));
  if (source.status !== undefined) registerStatusMetrics(meter, source.status.bind(source));
  return {
    url: opts.port === undefined ? undefined : `http://${host}:${opts.port}/metrics`,
    close: async () => {
      await provider.shutdown();
    },
  };
}
