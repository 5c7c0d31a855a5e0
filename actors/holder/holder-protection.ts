import { protectedCreditHeadroom, protectionStatus } from "../../policies/index.ts";
import type { HolderConfig, ProtectedRamEvidence } from "./holder-config.ts";
import type { HolderLane } from "./holder-lane.ts";

/** True when protected RAM applies: configured, claimed as a residency, and evidence at hand. */
function protectedRamApplies(
  config: HolderConfig,
  evidence: ProtectedRamEvidence | undefined,
): evidence is ProtectedRamEvidence {
  return config.protectedRam !== undefined && evidence !== undefined && config.residency.includes("protected_ram");
}

/** Protection status of the holder's RAM queue now (`none` without protected-RAM configuration). */
export function ramProtectionState(
  config: HolderConfig,
  evidence: ProtectedRamEvidence | undefined,
  lanes: ReadonlyMap<string, HolderLane>,
  now: number,
): string {
  if (!protectedRamApplies(config, evidence)) return "none";
  let queued = 0;
  for (const hl of lanes.values()) queued += hl.ramStoredBytes();
  return protectionStatus(evidence, queued, now, config.protectedRam!);
}

/**
 * Credit bytes any lane may still promise so that RAM queued plus promised stays within the
 * protected-RAM bound (policies/protected-ram.ts); unlimited without usable protected evidence.
 */
export function ramCreditHeadroom(
  config: HolderConfig,
  evidence: ProtectedRamEvidence | undefined,
  lanes: ReadonlyMap<string, HolderLane>,
  now: number,
): number {
  if (!protectedRamApplies(config, evidence)) return Infinity;
  let queued = 0;
  for (const hl of lanes.values()) queued += hl.ramStoredBytes() + hl.arena.outstanding(hl.volume, hl.lane);
  return protectedCreditHeadroom(evidence, queued, now, config.protectedRam!);
}
