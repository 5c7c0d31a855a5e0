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
