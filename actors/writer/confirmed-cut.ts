import { CustodyError } from "../../core/index.ts";
import type { VolumeStatus } from "../../transport/protocol/index.ts";

/** A status document the writer does not act on (counted as `status_<code>`). */
export class StatusRefusedError extends CustodyError {
  constructor(code: "wrong_volume" | "cut_beyond_head", message: string, detail: Record<string, unknown>) {
    super(code, message, detail);
  }
}

/**
 * The confirmed cut of each of `lanes` in `doc` (finite ones only), for the writer of `volume`.
 * Throws StatusRefusedError for another volume's document, or one confirming a cut past what the
 * writer has assigned on a lane (`next` - 1): no holder can have receipted that, so the document
 * is not the controller's view of this writer, and acting on it would drop the writer's copies
 * early. Checked for every lane before any is taken in. Pure.
 */
export function confirmedCuts<L extends { readonly spec: { readonly lane: string }; readonly next: number }>(
  doc: VolumeStatus,
  volume: string,
  lanes: readonly L[],
): [L, number][] {
  if (doc.volume !== volume)
    throw new StatusRefusedError("wrong_volume", `status of volume ${doc.volume}, this writer writes ${volume}`, {
      volume: doc.volume,
    });
  const cuts = lanes
    .map((l) => [l, confirmedCut(doc, l.spec.lane)] as [L, number])
    .filter(([, cut]) => Number.isFinite(cut));
  const past = cuts.find(([l, cut]) => cut > l.next - 1);
  if (past !== undefined)
    throw new StatusRefusedError(
      "cut_beyond_head",
      `status confirms ${past[0].spec.lane} through ${past[1]}, past the writer's head ${past[0].next - 1}`,
      { lane: past[0].spec.lane, cut: past[1], head: past[0].next - 1 },
    );
  return cuts;
}

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
