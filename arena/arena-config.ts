import { InvalidArenaConfigError } from "./errors.ts";

/** Tunables of one lane arena. All byte sizes except `maxUnitBytes` are multiples of `segmentBytes`. */
export interface ArenaConfig {
  /** Size of every segment (default 1 MiB). */
  segmentBytes: number;
  /** Capacity admitted (secured) at start. */
  initialBytes: number;
  /** Capacity is grown in steps of this size. */
  incrementBytes: number;
  /** Capacity never exceeds this. */
  hardLimitBytes: number;
  /** Largest stored unit record (32-byte digest + 8 bytes per record + payload); at most half a segment. */
  maxUnitBytes: number;
  /** Capacity kept back for manifests and bookkeeping; never granted as credits. */
  manifestReserveBytes: number;
  /** An open segment seals after this long even when not full (bounds receipt/RPO latency). */
  maxOpenDelayMs: number;
  /** Ask for the next increment once unpromised free space drops below this. */
  growthLowWaterBytes: number;
}

const MiB = 1024 * 1024;

/** Defaults: 1 MiB segments, 64 MiB admitted, +16 MiB steps, 1 GiB limit, 128 KiB units, 50 ms seal delay. */
export const DEFAULT_ARENA_CONFIG: ArenaConfig = {
  segmentBytes: MiB,
  initialBytes: 64 * MiB,
  incrementBytes: 16 * MiB,
  hardLimitBytes: 1024 * MiB,
  maxUnitBytes: 128 * 1024,
  manifestReserveBytes: MiB,
  maxOpenDelayMs: 50,
  growthLowWaterBytes: 16 * MiB,
};

/**
 * Fills defaults and checks consistency. Throws InvalidArenaConfigError when a size is not a
 * positive integer, not a multiple of the segment size where required, when initial > limit, or
 * when `maxUnitBytes` exceeds half a segment (the credit bound relies on it).
 */
export function resolveArenaConfig(partial: Partial<ArenaConfig> = {}): ArenaConfig {
  const segmentBytes = partial.segmentBytes ?? DEFAULT_ARENA_CONFIG.segmentBytes;
  const scale = segmentBytes / DEFAULT_ARENA_CONFIG.segmentBytes;
  const pick = (k: keyof ArenaConfig, scaled: boolean): number =>
    partial[k] ??
    (scaled
      ? Math.max(segmentBytes, Math.round((DEFAULT_ARENA_CONFIG[k] * scale) / segmentBytes) * segmentBytes)
      : DEFAULT_ARENA_CONFIG[k]);
  const c: ArenaConfig = {
    segmentBytes,
    initialBytes: pick("initialBytes", true),
    incrementBytes: pick("incrementBytes", true),
    hardLimitBytes: pick("hardLimitBytes", true),
    maxUnitBytes: partial.maxUnitBytes ?? Math.floor(segmentBytes / 8),
    manifestReserveBytes: pick("manifestReserveBytes", true),
    maxOpenDelayMs: pick("maxOpenDelayMs", false),
    growthLowWaterBytes: pick("growthLowWaterBytes", true),
  };
  for (const [k, v] of Object.entries(c)) {
    if (!Number.isSafeInteger(v) || v < 0 || (k === "segmentBytes" && v === 0)) {
      throw new InvalidArenaConfigError(`${k} must be a non-negative integer`, { [k]: v });
    }
  }
  for (const k of ["initialBytes", "incrementBytes", "hardLimitBytes", "manifestReserveBytes"] as const) {
    if (c[k] % segmentBytes !== 0) {
      throw new InvalidArenaConfigError(`${k} must be a multiple of segmentBytes`, { [k]: c[k], segmentBytes });
    }
  }
  if (c.initialBytes > c.hardLimitBytes) {
    throw new InvalidArenaConfigError("initialBytes exceeds hardLimitBytes", { ...c });
  }
  if (c.maxUnitBytes < 64 || c.maxUnitBytes > segmentBytes / 2) {
    throw new InvalidArenaConfigError("maxUnitBytes must be between 64 and half a segment", {
      maxUnitBytes: c.maxUnitBytes,
      segmentBytes,
    });
  }
  return c;
}
