import type { EvaluationStateJson } from "../../policies/index.ts";

export const AS_OF = 1_800_000_000_000;
export const observed = { kind: "observed" as const, atMs: AS_OF };

/**
 * A volume with a raw and a coalesced stream (issue #22): the writer at `src` (r1) acknowledged l0
 * through 60; `raw` (r1) holds it all, `img` (r2) a coalesced image through `imageCut`; `vault`
 * (r3) keeps the genesis base and any `bases` given.
 */
export function coalescedState(imageCut: number, scenarios: EvaluationStateJson["scenarios"], bases: EvaluationStateJson["bases"] = []): EvaluationStateJson {
  return {
    volume: "v",
    asOfMs: AS_OF,
    staleAfterMs: 60_000,
    source: { site: "src", lanes: { l0: 60 } },
    commits: [{ lane: "l0", first: 1, last: 60, committedAtMs: AS_OF - 1000, bytesPerSeq: 4096 }],
    sites: [
      { id: "src", region: "r1", az: "a1", host: "h-src" },
      { id: "s-raw", region: "r1", az: "a2", host: "h-raw" },
      { id: "s-img", region: "r2", az: "b1", host: "h-img" },
      { id: "s-v", region: "r3", az: "c1", host: "h-v" },
    ],
    holders: [
      { id: "raw", site: "s-raw", claims: [{ lane: "l0", ranges: [[1, 60]], residency: "disk", evidence: observed }] },
      { id: "img", site: "s-img", claims: [], coalesced: [{ lane: "l0", ranges: [[1, imageCut]], residency: "disk", evidence: observed }] },
      { id: "vault", site: "s-v", claims: [] },
    ],
    bases: [{ id: "genesis", holder: "vault", cut: { l0: 0 }, bytes: 0 }, ...bases],
    keyAuthorities: [{ id: "kms", site: "s-v" }],
    recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
    scenarios,
  };
}
