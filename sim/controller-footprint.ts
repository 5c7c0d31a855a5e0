import type { Controller } from "../actors/index.ts";
import type { TracedControlLog } from "./traced-control-log.ts";

/** What a controller keeps in memory against what the control log holds (the bounded-memory check). */
export interface ControllerFootprint {
  /** Release audits kept in memory. */
  readonly audits: number;
  /** Releases committed (the controller's counter). */
  readonly releasesCommitted: number;
  /** Commit runs kept. */
  readonly commitRuns: number;
  /** Release entries persisted in the control log. */
  readonly releaseEntries: number;
}

/** Reads `controller`'s footprint and counts the release entries `store` holds. */
export async function controllerFootprintOf(
  controller: Controller,
  store: TracedControlLog,
): Promise<ControllerFootprint> {
  const entries = await store.readAll();
  const releaseEntries = entries.filter(
    (e) => e.event.type === "release_ranges" || e.event.type === "release_to_base",
  ).length;
  return {
    audits: controller.releaseAudits().length,
    releasesCommitted: controller.counters.get("release_committed"),
    commitRuns: controller.commitRunCount(),
    releaseEntries,
  };
}
