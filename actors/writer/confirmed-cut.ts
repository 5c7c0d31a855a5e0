import type { VolumeStatus } from "../../protocol/index.ts";

/**
 * The cut of `lane` that every required scenario of the controller's status keeps on observed
 * (fresh) evidence: -1 when one of them keeps nothing or its evidence is not observed, Infinity
 * when no scenario is required (nothing confirms anything then). A cut from the coalesced stream
 * confirms no raw record (the image omits them): such a scenario counts as keeping nothing. Pure.
 */
export function confirmedCut(doc: VolumeStatus, lane: string): number {
  let cut = Infinity;
  for (const x of doc.scenarios) {
    if (!x.required) continue;
    const c = x.evidence === "observed" && x.stream !== "coalesced" ? x.cut?.find(([l]) => l === lane)?.[1] : undefined;
    cut = Math.min(cut, c ?? -1);
  }
  return cut;
}
