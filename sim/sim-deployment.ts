import type { ControllerConfig } from "../actors/index.ts";
import type { VolumeWriterConfig } from "../actors/index.ts";
import type { Site } from "../policies/index.ts";
import type { WorldSpec } from "./world.ts";

/** Blocks of the simulated writer's volume. */
export const SIM_VOLUME_BLOCKS = 256;
/** The control region of the simulated world. */
export const SIM_CONTROL_REGION = "vault";

/** The controller's configuration for the world: one lane, standbys in the vault, the world's scenarios. */
export function controllerConfigFor(spec: WorldSpec, standbys: readonly string[]): ControllerConfig {
  const holderSites: Record<string, string> = { [spec.vault.holder]: spec.vault.site };
  for (const h of spec.holders) holderSites[h.id] = h.site;
  for (const id of standbys) holderSites[id] = spec.vault.site;
  return {
    controllerId: "ctrl",
    region: SIM_CONTROL_REGION,
    evalIntervalMs: spec.timing.evalMs,
    admission: "key-continuity",
    repair: {
      standby: standbys.map((holderId) => ({ holderId, site: spec.vault.site })),
      bandwidthBytesPerSec: 100_000_000,
      receiptTimeoutMs: 4_000,
    },
    topology: {
      volume: spec.volume,
      lanes: [spec.lane],
      writerSite: spec.writer.site,
      sites: spec.sites,
      holderSites,
      bases: [{ id: "base0", holder: spec.vault.holder, cut: { [spec.lane]: 0 }, bytes: 0 }],
      keyAuthorities: [{ id: "ka", site: spec.vault.site }],
      links: [],
      recovery: {
        destination: spec.vault.site,
        detectSec: 1,
        authorizeSec: 1,
        acquireCapacitySec: 1,
        persistSec: 1,
        validateSec: 1,
      },
      scenarios: spec.scenarios,
      timelines: [],
      staleAfterMs: 2 * spec.timing.suspectMs,
      protectedEvidenceMaxAgeMs: 10 * spec.timing.durationMs + 60_000,
      releasable: spec.holders.map((h) => h.id),
      durable: spec.holders.filter((h) => h.disk).map((h) => h.id),
    },
  };
}

/** The writer's configuration for one life: its term, and the first sequence that term writes. */
export function writerConfigFor(
  spec: WorldSpec,
  term: number,
  firstSeq: number,
  holderSites: Record<string, Site>,
): VolumeWriterConfig {
  return {
    writerId: spec.writer.id,
    volume: spec.volume,
    term,
    lanes: [
      { lane: spec.lane, fromLba: 0, toLba: SIM_VOLUME_BLOCKS - 1, holders: [...spec.writer.downstream], firstSeq },
    ],
    contracts: [],
    holderSites,
    topologyEpoch: 1,
    policyGeneration: 1,
  };
}
