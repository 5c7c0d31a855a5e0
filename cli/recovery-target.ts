import type { VolumeTopology } from "../actors/index.ts";
import { CustodyError } from "../core/index.ts";

/** Thrown when `--to` names a site the volume's deployment does not have. */
export class UnknownSiteError extends CustodyError {
  constructor(volume: string, site: string, known: readonly string[], file: string) {
    super("unknown_site", `--to ${site}: ${volume} has no such site (its sites: ${known.join(", ")}; from ${file})`, {
      volume,
      site,
      known,
      file,
    });
  }
}

/** Thrown when the volume's size is neither given nor known to its deployment. */
export class BlockCountUnknownError extends CustodyError {
  constructor(volume: string, file: string) {
    super(
      "block_count_unknown",
      `the size of ${volume} is not in ${file} (a controller config written before custody init recorded it): ` +
        `give --blocks`,
      { volume, file },
    );
  }
}

/** Where a recovery goes and how large a volume it builds, and where each answer came from. */
export interface RecoveryTarget {
  readonly site: string;
  /** `--to`, the named scenario's own destination, or the volume's recovery site. */
  readonly siteFrom: "option" | "scenario" | "recovery site";
  readonly blockCount: number;
  /** `--blocks`, or the volume's deployment. */
  readonly blocksFrom: "option" | "deployment";
}

/**
 * The destination and size of a recovery of `topology`'s volume (read from `file`). The site is
 * `to` when given — it must be one of the volume's sites — else the scenario's own destination,
 * else the volume's recovery site. The size is `blocks` when given, else the deployment's. Pure;
 * throws UnknownSiteError or BlockCountUnknownError.
 */
export function recoveryTarget(
  topology: VolumeTopology,
  file: string,
  o: { readonly to?: string | undefined; readonly blocks?: number | undefined; readonly scenario?: string | undefined },
): RecoveryTarget {
  const known = topology.sites.map((s) => s.id);
  if (o.to !== undefined && !known.includes(o.to)) throw new UnknownSiteError(topology.volume, o.to, known, file);
  const own = topology.scenarios.find((s) => s.name === o.scenario)?.destination;
  const site = o.to ?? own ?? topology.recovery.destination;
  const siteFrom = o.to !== undefined ? "option" : own !== undefined ? "scenario" : "recovery site";
  const blockCount = o.blocks ?? topology.blockCount;
  if (blockCount === undefined) throw new BlockCountUnknownError(topology.volume, file);
  return { site, siteFrom, blockCount, blocksFrom: o.blocks !== undefined ? "option" : "deployment" };
}
