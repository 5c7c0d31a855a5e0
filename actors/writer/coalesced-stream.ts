import { isIdentifier } from "../../core/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";
import type { CoalescedStreamSpec } from "./coalesced-stream-spec.ts";
import { WriterConfigError, type LaneSpec, type VolumeWriterConfig } from "./writer-config.ts";

export type { CoalescedStreamSpec };

/** Default suffix of a derived lane's name. */
export const DEFAULT_COALESCED_SUFFIX = "-coalesced";

/** The derived lane of raw lane `lane` under `spec`. */
export function derivedLaneName(spec: CoalescedStreamSpec, lane: string): string {
  return `${lane}${spec.laneSuffix ?? DEFAULT_COALESCED_SUFFIX}`;
}

/** The derived lanes' specs: same LBA range and first sequence as the raw lane, the stream's holders. */
export function derivedLaneSpecs(config: VolumeWriterConfig): LaneSpec[] {
  const c = config.coalesced;
  if (c === undefined) return [];
  return config.lanes.map((l) => ({
    lane: derivedLaneName(c, l.lane),
    fromLba: l.fromLba,
    toLba: l.toLba,
    holders: c.holders,
    ...(l.firstSeq === undefined ? {} : { firstSeq: l.firstSeq }),
  }));
}

/** Checks the coalesced stream of `config`; throws WriterConfigError naming the first problem. */
export function checkCoalescedStream(config: VolumeWriterConfig): void {
  const c = config.coalesced;
  if (c === undefined) return;
  if (config.custody === false) throw new WriterConfigError("a coalesced stream needs custody on", {});
  if (c.holders.length === 0) throw new WriterConfigError("the coalesced stream has no holder", {});
  const positive = (v: number | undefined) => v === undefined || (Number.isSafeInteger(v) && v >= 1);
  if (
    !positive(c.windowRecords) ||
    !positive(c.windowMs) ||
    !positive(c.maxWindowRecords) ||
    !positive(c.windowsPerTick)
  ) {
    throw new WriterConfigError("coalesced stream cadence and budgets must be positive integers", { ...c });
  }
  if (!positive(c.maxWindowBytes) || (c.maxWindowBytes !== undefined && c.maxWindowBytes < BLOCK_SIZE)) {
    throw new WriterConfigError(`coalesced window byte budget must hold at least one block (${BLOCK_SIZE})`, {
      maxWindowBytes: c.maxWindowBytes,
    });
  }
  const raw = new Set(config.lanes.map((l) => l.lane));
  for (const l of config.lanes) {
    const name = derivedLaneName(c, l.lane);
    if (!isIdentifier(name) || raw.has(name))
      throw new WriterConfigError(`derived lane name ${JSON.stringify(name)} is not a free identifier`, {
        lane: l.lane,
        derived: name,
      });
  }
}
