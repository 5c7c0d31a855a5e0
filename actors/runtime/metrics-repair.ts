import type { Meter } from "@opentelemetry/api";
import { RepairStatusState, type RepairStatus, type VolumeStatus } from "../../transport/protocol/index.ts";

/**
 * Repair progress on a controller's `/metrics`, read from its newest status document: per state
 * (needed, running, done, failed), how many repairs of declared failures it lists and the bytes
 * they copied so far. One series per state, whatever the number of repairs (low cardinality).
 */
export function registerRepairMetrics(meter: Meter, status: () => VolumeStatus | undefined): void {
  const perState = (name: string, description: string, unit: string, value: (r: RepairStatus) => number) =>
    meter.createObservableGauge(name, { description, unit }).addCallback((r) => {
      const doc = status();
      if (doc === undefined) return;
      for (const state of Object.values(RepairStatusState)) {
        const total = (doc.repairs ?? []).filter((x) => x.state === state).reduce((sum, x) => sum + value(x), 0);
        r.observe(total, { volume: doc.volume, state });
      }
    });
  perState("custody_repairs", "repairs of declared failures in the controller's status, per state", "1", () => 1);
  perState("custody_repair_copied_bytes", "bytes copied by those repairs, per state", "By", (x) => x.copiedBytes ?? 0);
}

/** A repair worker's `/metrics`: the repair tasks it runs now. */
export function registerRepairWorkerMetrics(meter: Meter, id: string, running: () => number): void {
  meter
    .createObservableGauge("custody_repair_tasks_running", {
      description: "repair tasks this worker runs now",
      unit: "1",
    })
    .addCallback((r) => r.observe(running(), { id }));
}
