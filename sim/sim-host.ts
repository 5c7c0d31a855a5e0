import type { Holder } from "../actors/index.ts";
import type { HolderConfigInput, ProtectedRamEvidence } from "../actors/index.ts";
import { CrashFileLayer } from "../core/index.ts";
import type { Site } from "../policies/index.ts";
import { BLOCK_SIZE } from "../volume/index.ts";
import { SimPreservedRam } from "./preserved-ram.ts";
import type { HolderSpec, WorldSpec } from "./world.ts";

/** Virtual wall-clock time at which every simulated run starts (fault times are relative to it). */
export const SIM_EPOCH_MS = 1_700_000_000_000;

/** One simulated holder host: the real Holder actor while it runs, and the disk that outlives it. */
export interface HolderHost {
  readonly spec: HolderSpec;
  readonly site: Site;
  readonly upstream: readonly string[];
  incarnation: number;
  holder: Holder | undefined;
  /** Destroyed for good (site destruction). */
  dead: boolean;
  evidenceValid: boolean;
  /** The host's disk (state directory, spill stream); a crash keeps only what was synced. */
  files: CrashFileLayer;
  /** The host's preserved memory (protected-RAM hosts). */
  readonly preserved: SimPreservedRam | undefined;
  /** Bumped at every (re)start; in-flight restarts of an older life give up. */
  life: number;
}

/** The holder configuration a host of `spec` runs with (one lane, the world's timing). */
export function holderConfigFor(spec: WorldSpec, h: HolderHost): HolderConfigInput {
  const s = h.site;
  const t = spec.timing;
  const unitBytes = Math.max(spec.workload.bytesPerUnit, BLOCK_SIZE) + 4096;
  return {
    holderId: h.spec.id,
    site: { region: s.region, az: s.az, host: s.host },
    residency: [
      "ram",
      ...(h.spec.disk ? (["disk"] as const) : []),
      ...(h.spec.protectedRam ? (["protected_ram"] as const) : []),
    ],
    lanes: [{ volume: spec.volume, lane: spec.lane, upstream: [...h.upstream], downstream: [...h.spec.downstream] }],
    arena: {
      segmentBytes: 256 * 1024,
      limitBytes: 32 << 20,
      maxOutstandingCredit: Math.max(256 * 1024, t.creditWindow * unitBytes),
      maxUnitBytes: 128 * 1024,
    },
    receipts: { maxUnits: 16, maxDelayMs: t.receiptMs },
    ...(h.spec.disk ? { flush: { intervalMs: t.flushMs, deadlineMs: t.flushMs * 4 } } : {}),
    ...(h.spec.protectedRam
      ? {
          protectedRam: {
            evidence: protectedRamEvidence(h.evidenceValid),
            maxEvidenceAgeMs: 10 * t.durationMs + 60_000,
            minBatteryHealth: 0.5,
          },
        }
      : {}),
    epoch: 1,
    policyGeneration: 1,
  };
}

/** The protected-RAM evidence a simulated host reports: valid, or with a dead battery. */
export function protectedRamEvidence(valid: boolean): ProtectedRamEvidence {
  return {
    protectedBytes: 256 << 20,
    batteryHealth: valid ? 1 : 0,
    holdUpMs: 10_000,
    autonomousPreservation: true,
    drainBytesPerSec: 500_000_000,
    detectionMs: 10,
    persistenceCompletionMs: 50,
    marginMs: 50,
    measuredAt: SIM_EPOCH_MS,
    capabilityGeneration: 1,
  };
}

/** The standby holder that may replace `holderId`. */
export function standbyId(holderId: string): string {
  return `standby-${holderId}`;
}

/** The failure domain a holder is admitted with (custody's one rule). */
export { failureDomainOf } from "../custody/index.ts";

/**
 * Adds every host of the world to `hosts`: one per holder, then one standby in the vault per
 * holder (never struck: the controller's repair launcher starts one to replace each holder a
 * declared failure takes away). Returns the standby ids.
 */
export function addWorldHosts(
  spec: WorldSpec,
  siteById: ReadonlyMap<string, Site>,
  hosts: Map<string, HolderHost>,
): string[] {
  for (const h of spec.holders) {
    const upstream = [spec.writer, ...spec.holders].filter((x) => x.downstream.includes(h.id)).map((x) => x.id);
    const preserved = h.protectedRam ? new SimPreservedRam() : undefined;
    hosts.set(h.id, {
      spec: h,
      site: siteById.get(h.site)!,
      upstream,
      incarnation: 1,
      holder: undefined,
      dead: false,
      evidenceValid: h.protectedRam,
      files: new CrashFileLayer(),
      preserved,
      life: 0,
    });
  }
  const standbys: string[] = [];
  for (const h of spec.holders) {
    const id = standbyId(h.id);
    standbys.push(id);
    const sb: HolderSpec = {
      id,
      site: spec.vault.site,
      disk: false,
      protectedRam: false,
      keepUnits: 0,
      downstream: [],
    };
    hosts.set(id, {
      spec: sb,
      site: siteById.get(spec.vault.site)!,
      upstream: [spec.writer.id],
      incarnation: 1,
      holder: undefined,
      dead: false,
      evidenceValid: false,
      files: new CrashFileLayer(),
      preserved: undefined,
      life: 0,
    });
  }
  return standbys;
}
