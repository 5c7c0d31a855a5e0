import { isIdentifier } from "../../core/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";
import { WriterConfigError, type LaneSpec, type VolumeWriterConfig } from "./writer-config.ts";

/**
 * A volume's optional coalesced stream (issue #22 item 1), configured apart from the raw lanes:
 * its own holders and its own cadence. Each raw lane `L` gets a derived lane `L` + `laneSuffix`
 * in the raw lane's sequence space: one derived unit per window `first..last` of raw sequences,
 * holding only the newest version of each block of that window. Holders of a derived lane
 * receipt it as `coalesced` with `sourceCutSeq` = the window end; it is never the raw log.
 */
export interface CoalescedStreamSpec {
  /** First-hop holders of every derived lane (the raw lanes' holders are not involved). */
  readonly holders: readonly string[];
  /** Derived lane name = raw lane name + this suffix (default `-coalesced`). */
  readonly laneSuffix?: string;
  /** A window closes after this many raw records of its lane... */
  readonly windowRecords: number;
  /** ...or once its oldest record is this old (checked whenever the writer cuts units or publishes progress). */
  readonly windowMs?: number;
  /** Window budget: a closed window over either bound is split (never truncated). Defaults 4096 records, 8 MiB. */
  readonly maxWindowRecords?: number;
  readonly maxWindowBytes?: number;
  /** CPU budget: windows coalesced per writer tick (default 4); the rest wait, in order. */
  readonly windowsPerTick?: number;
}

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
