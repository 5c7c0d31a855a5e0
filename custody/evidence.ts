import { Residency } from "../core/index.ts";
import { boolAt, listOf, numberAt, PositionalError, stringAt, tokenAt, tupleOf, uintAt } from "./positional.ts";

/**
 * Residency evidence kinds understood by receipt version 1: exactly the residencies of
 * core/residency.ts (their one home). The list is closed per version: a kind not listed here is
 * *unsupported*, never read as a weaker or stronger kind.
 */
export const EvidenceKind = Residency;
export type EvidenceKind = Residency;

const KNOWN_KINDS: ReadonlySet<string> = new Set(Object.values(EvidenceKind));

/** True when `kind` is an evidence kind of this version. */
export function isKnownEvidenceKind(kind: string): kind is EvidenceKind {
  return KNOWN_KINDS.has(kind);
}

interface EvidenceCommon {
  /** Generation of the holder's capability record this evidence was checked against. */
  readonly capabilityGeneration: number;
  /** When the holder last confirmed the evidence (ms since epoch, holder clock). */
  readonly observedAt: number;
}

/** Volatile memory residency: no power-loss or process-loss survival. */
export interface RamEvidence extends EvidenceCommon {
  readonly kind: typeof EvidenceKind.ram;
}

/**
 * Protected-memory residency. A bare "battery present" flag is not evidence: the holder must state
 * the protected capacity, the hold-up time and battery health, the autonomous preservation path,
 * whether data *and* metadata come back after restart, and what that path depends on.
 */
export interface ProtectedRamEvidence extends EvidenceCommon {
  readonly kind: typeof EvidenceKind.protected_ram;
  readonly protectedCapacityBytes: number;
  readonly holdUpMs: number;
  /** Battery/capacitor health in percent (0..100). */
  readonly batteryHealthPct: number;
  /** Name of the autonomous path that preserves memory on power loss (e.g. "nvdimm-save"). */
  readonly preservationPath: string;
  /** True when data and its metadata are recoverable after a restart. */
  readonly recoversMetadata: boolean;
  /** Components the preservation path depends on (controller, drain target, PSU...). */
  readonly dependencies: readonly string[];
}

/** Disk residency: a byte range of a file covered by a *completed* sync (not a scheduled one). */
export interface DiskEvidence extends EvidenceCommon {
  readonly kind: typeof EvidenceKind.disk;
  readonly file: string;
  readonly offset: number;
  readonly length: number;
  /** Completion time of the fdatasync that made the range durable. */
  readonly syncedAt: number;
}

/** Evidence of a kind this version understands. */
export type ResidencyEvidence = RamEvidence | ProtectedRamEvidence | DiskEvidence;

/**
 * Evidence as decoded from the wire when its kind is not one of ours. It is kept (so that
 * verification can name it) but it is never usable: verification refuses it as unsupported.
 */
export interface UnrecognizedEvidence extends EvidenceCommon {
  readonly kind: "unrecognized";
  readonly wireKind: string;
  /** The undecoded details, kept so the claim re-encodes byte for byte. */
  readonly details: readonly unknown[];
}

/** What a decoded receipt may carry before verification. */
export type ResidencyClaim = ResidencyEvidence | UnrecognizedEvidence;

/**
 * True when the evidence, taken at face value, says the bytes survive a power loss of the holder.
 * RAM never does. Protected RAM does only with a positive hold-up time and capacity and recoverable
 * metadata. Disk does (its schema requires a completed sync).
 */
export function survivesPowerLoss(e: ResidencyEvidence): boolean {
  switch (e.kind) {
    case EvidenceKind.ram:
      return false;
    case EvidenceKind.protected_ram:
      return e.recoversMetadata && e.holdUpMs > 0 && e.protectedCapacityBytes > 0 && e.batteryHealthPct > 0;
    case EvidenceKind.disk:
      return true;
  }
}

// ---- canonical positional form: [kind, capabilityGeneration, observedAt, details] ----

/** Positional wire form of one evidence item. */
export type EvidenceTuple = [string, number, number, unknown[]];

/** Encodes evidence positionally, in the fixed field order of version 1. */
export function evidenceToTuple(e: ResidencyClaim): EvidenceTuple {
  switch (e.kind) {
    case EvidenceKind.ram:
      return [e.kind, e.capabilityGeneration, e.observedAt, []];
    case EvidenceKind.protected_ram:
      return [
        e.kind,
        e.capabilityGeneration,
        e.observedAt,
        [
          e.protectedCapacityBytes,
          e.holdUpMs,
          e.batteryHealthPct,
          e.preservationPath,
          e.recoversMetadata,
          [...e.dependencies],
        ],
      ];
    case EvidenceKind.disk:
      return [e.kind, e.capabilityGeneration, e.observedAt, [e.file, e.offset, e.length, e.syncedAt]];
    case "unrecognized":
      return [e.wireKind, e.capabilityGeneration, e.observedAt, [...e.details]];
  }
}

/**
 * Decodes positional evidence. A known kind with malformed details throws PositionalError (the
 * batch decoder turns it into `malformed`); an unknown kind becomes `UnrecognizedEvidence`.
 */
export function evidenceFromTuple(raw: unknown, path = "evidence"): ResidencyClaim {
  const t = tupleOf(raw, 4, path);
  const kind = stringAt(t[0], 1, 64, `${path}.0`);
  const capabilityGeneration = uintAt(t[1], `${path}.1`);
  const observedAt = uintAt(t[2], `${path}.2`);
  const details = listOf(t[3], 64, `${path}.3`);
  const d = `${path}.3`;
  switch (kind) {
    case EvidenceKind.ram:
      tupleOf(details, 0, d);
      return { kind, capabilityGeneration, observedAt };
    case EvidenceKind.protected_ram: {
      tupleOf(details, 6, d);
      return {
        kind,
        capabilityGeneration,
        observedAt,
        protectedCapacityBytes: uintAt(details[0], `${d}.0`),
        holdUpMs: uintAt(details[1], `${d}.1`),
        batteryHealthPct: numberAt(details[2], 0, 100, `${d}.2`),
        preservationPath: tokenAt(details[3], `${d}.3`),
        recoversMetadata: boolAt(details[4], `${d}.4`),
        dependencies: listOf(details[5], 64, `${d}.5`).map((x, i) => tokenAt(x, `${d}.5.${i}`)),
      };
    }
    case EvidenceKind.disk: {
      tupleOf(details, 4, d);
      const syncedAt = uintAt(details[3], `${d}.3`);
      if (syncedAt > observedAt) throw new PositionalError(`${d}.3`, "syncedAt is after observedAt");
      return {
        kind,
        capabilityGeneration,
        observedAt,
        file: stringAt(details[0], 1, 4096, `${d}.0`),
        offset: uintAt(details[1], `${d}.1`),
        length: uintAt(details[2], `${d}.2`),
        syncedAt,
      };
    }
    default:
      return { kind: "unrecognized", wireKind: kind, capabilityGeneration, observedAt, details };
  }
}
