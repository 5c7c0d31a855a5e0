import type { Holding } from "../../custody/index.ts";
import type { ConsistencyCut } from "../../custody/index.ts";
import type { ConsistencyManifest } from "../../policies/index.ts";

/**
 * Splits a receipt's consistency cuts into manifests: each manifest is a run of members in
 * strictly ascending (volume, lane) order, so a member that does not sort after its predecessor
 * starts the next one (how holders list them, actors/holder/lane-manifests.ts). Pure.
 */
export function splitConsistencyCuts(cuts: readonly ConsistencyCut[]): ConsistencyCut[][] {
  const out: ConsistencyCut[][] = [];
  let run: ConsistencyCut[] = [];
  for (const c of cuts) {
    const prev = run[run.length - 1];
    if (prev !== undefined && !(prev.volume < c.volume || (prev.volume === c.volume && prev.lane < c.lane))) {
      out.push(run);
      run = [];
    }
    run.push(c);
  }
  if (run.length > 0) out.push(run);
  return out;
}

/** The manifest id of a cut: `m:<lane>:<seq>:...` in lane order (ids must be stable across receipts). */
export function manifestId(cut: Readonly<Record<string, number>>): string {
  return `m:${Object.keys(cut)
    .sort()
    .map((l) => `${l}:${cut[l]}`)
    .join(":")}`;
}

/**
 * The consistency manifests of `volume` that fresh holdings list, each with every holder listing
 * it. Holders keep them in memory beside the lane range they cover (`residency: "ram"`). A
 * manifest naming a lane the volume does not have, another volume, or only one lane is ignored.
 * Pure.
 */
export function receiptedManifests(
  volume: string,
  lanes: readonly string[],
  holdings: readonly Holding[],
  fresh: (h: Holding) => boolean,
): ConsistencyManifest[] {
  return receiptedIn(volume, new Map(lanes.map((l) => [l, l])), holdings, fresh);
}

/**
 * The coalesced stream's manifests (`derived` maps each derived lane to its raw lane): those the
 * derived lanes' fresh holdings list, renamed into raw lanes, as cuts of the images. Pure.
 */
export function receiptedImageManifests(
  volume: string,
  derived: Readonly<Record<string, string>>,
  holdings: readonly Holding[],
  fresh: (h: Holding) => boolean,
): ConsistencyManifest[] {
  return receiptedIn(
    volume,
    new Map(Object.entries(derived)),
    holdings,
    (h) => h.representation === "coalesced" && fresh(h),
  );
}

/** Manifests over the lanes `rename` knows (keys: listed names; values: names in the result). */
function receiptedIn(
  volume: string,
  rename: ReadonlyMap<string, string>,
  holdings: readonly Holding[],
  fresh: (h: Holding) => boolean,
): ConsistencyManifest[] {
  const byId = new Map<string, { cut: Record<string, number>; holders: Set<string> }>();
  for (const h of holdings) {
    if (h.volume !== volume || !fresh(h)) continue;
    // Receipts from before manifests were shipped may not carry the list at all.
    for (const run of splitConsistencyCuts(h.receipt.payload.manifest.consistencyCuts ?? [])) {
      if (run.length < 2 || run.some((c) => c.volume !== volume || !rename.has(c.lane))) continue;
      const cut = Object.fromEntries(run.map((c) => [rename.get(c.lane)!, c.throughSeq]));
      const id = manifestId(cut);
      const m = byId.get(id) ?? { cut, holders: new Set<string>() };
      m.holders.add(h.holderId);
      byId.set(id, m);
    }
  }
  return [...byId.entries()].map(([id, m]) => ({
    id,
    cut: m.cut,
    holders: [...m.holders].sort(),
    residency: "ram" as const,
  }));
}
