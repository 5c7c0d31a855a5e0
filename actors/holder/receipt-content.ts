import type { ResidencyEvidence } from "../../custody/index.ts";
import { makeReceipt, type CustodyReceipt, type PayloadDescription } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { HolderConfig, ProtectedRamEvidence } from "./holder-config.ts";
import type { HolderLane } from "./holder-lane.ts";
import type { BaseSnapshotRef } from "./holder-state.ts";

/**
 * What a holder states for one lane right now: one receipt for the RAM-resident ranges (protected
 * RAM only when `protectedEvidence` is given — the caller passes it only while the admission bound
 * holds) and one for the ranges a completed, in-deadline sync made disk-resident. Only stored units
 * are ever in the retained set, so a refused unit can never be claimed. Consumes receipt sequence
 * numbers of the lane and records what was claimed as protected (what an evacuation must save).
 */
export function laneReceipts(
  hl: HolderLane,
  config: HolderConfig,
  now: number,
  protectedEvidence: ProtectedRamEvidence | undefined,
  base: BaseSnapshotRef | undefined,
): CustodyReceipt[] {
  const disk = hl.obligations.diskResident;
  hl.manifests.prune(hl.obligations.retained);
  const ram = hl.obligations.retained.subtract(disk);
  const common = {
    holder: { holderId: config.holderId, incarnation: config.incarnation },
    volume: hl.volume,
    lane: hl.lane,
    issuedAt: now,
    writerTerm: hl.log.term,
    topologyEpoch: config.epoch,
    policyGeneration: config.policyGeneration,
    prefixBase: hl.log.base,
    // Replaced per receipt by `kept` (spreading keeps this key's place in the receipt object).
    payload: kept(hl, RangeSet.EMPTY, base).payload,
    obligation: {
      obligationId: `${hl.volume}-${hl.lane}`,
      releaseAuthority: { kind: "control_log", region: config.site.region },
    } as const,
    extensions: [],
  };
  const receipts: CustodyReceipt[] = [];
  if (!ram.isEmpty) {
    const e = protectedEvidence;
    const residency: ResidencyEvidence = e
      ? {
          kind: "protected_ram",
          capabilityGeneration: e.capabilityGeneration,
          observedAt: e.measuredAt,
          protectedCapacityBytes: e.protectedBytes,
          holdUpMs: e.holdUpMs,
          batteryHealthPct: Math.round(e.batteryHealth * 100),
          preservationPath: "autonomous-drain",
          recoversMetadata: true,
          dependencies: [],
        }
      : { kind: "ram", capabilityGeneration: 0, observedAt: now };
    if (e) hl.protectedClaimed = hl.protectedClaimed.union(ram);
    receipts.push(
      makeReceipt({ ...common, ...kept(hl, ram, base), receiptSeq: hl.receiptSeq++, retained: ram, residency }),
    );
  }
  const d = hl.lastDiskEvidence;
  if (!disk.isEmpty && d) {
    // The newest completed sync covers every earlier record of the one append stream.
    const residency: ResidencyEvidence = {
      kind: "disk",
      capabilityGeneration: 0,
      observedAt: now,
      file: d.file,
      offset: 0,
      length: d.offset + d.length,
      syncedAt: d.syncedAt,
    };
    receipts.push(
      makeReceipt({ ...common, ...kept(hl, disk, base), receiptSeq: hl.receiptSeq++, retained: disk, residency }),
    );
  }
  return receipts;
}

/**
 * The receipt's payload with the consistency manifests kept beside `ranges` (each a run of its
 * lanes in ascending order; see LaneManifests.cutsWithin).
 */
function kept(hl: HolderLane, ranges: RangeSet, base: BaseSnapshotRef | undefined): { payload: PayloadDescription } {
  const baseSnapshots =
    base === undefined ? [] : [{ snapshotId: base.snapshotId, volume: hl.volume, throughSeq: base.throughSeq }];
  const manifest = { baseSnapshots, consistencyCuts: hl.manifests.cutsWithin(hl.volume, ranges) };
  // A coalesced lane's units are whole windows, so the newest retained sequence is a window end:
  // the raw cut whose state the image reproduces (never possession of the raw records before it).
  if (hl.coalesced)
    return {
      payload: { representation: "coalesced", manifest, sourceCutSeq: ranges.max ?? Math.max(0, hl.log.base - 1) },
    };
  return { payload: { representation: "raw", manifest } };
}
