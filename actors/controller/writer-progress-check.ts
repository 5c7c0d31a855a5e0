import { CustodyError } from "../../core/index.ts";
import type { WriterProgressMessage } from "../../transport/protocol/index.ts";

/** Why writer progress was refused (each is also the counter it is counted under). */
export const ProgressRefusal = {
  /** The progress is about another volume. */
  wrongVolume: "wrong_volume",
  /** A lane is reported twice in one message (which head would count?). */
  duplicateLane: "progress_duplicate_lane",
  /** A lane this controller's topology does not have. */
  unknownLane: "progress_unknown_lane",
  /** A commit run reaches past the head reported beside it: the writer assigns a sequence before it reports its run. */
  runBeyondHead: "progress_run_beyond_head",
} as const;
export type ProgressRefusal = (typeof ProgressRefusal)[keyof typeof ProgressRefusal];

/** Writer progress that cannot be what a writer of this volume says; refused whole, before any lane is taken in. */
export class WriterProgressError extends CustodyError {
  constructor(code: ProgressRefusal, message: string, detail: Record<string, unknown>) {
    super(code, message, detail);
  }
}

/**
 * Checks writer progress against the controller's volume and lanes (pure); throws
 * WriterProgressError. Everything is checked before the controller takes any lane in, so a
 * message refused for one lane changes nothing for the others.
 */
export function checkWriterProgress(p: WriterProgressMessage, volume: string, lanes: readonly string[]): void {
  if (p.volume !== volume)
    throw new WriterProgressError(
      ProgressRefusal.wrongVolume,
      `progress of volume ${p.volume}, this controller serves ${volume}`,
      { volume: p.volume },
    );
  const seen = new Set<string>();
  for (const l of p.lanes) {
    if (seen.has(l.lane))
      throw new WriterProgressError(ProgressRefusal.duplicateLane, `lane ${l.lane} reported twice`, { lane: l.lane });
    seen.add(l.lane);
    if (!lanes.includes(l.lane))
      throw new WriterProgressError(ProgressRefusal.unknownLane, `lane ${l.lane} is not a lane of ${volume}`, {
        lane: l.lane,
      });
    const beyond = l.runs.find(([, last]) => last > l.head);
    if (beyond !== undefined)
      throw new WriterProgressError(
        ProgressRefusal.runBeyondHead,
        `lane ${l.lane}: a run through ${beyond[1]} is past head ${l.head}`,
        { lane: l.lane, head: l.head, last: beyond[1] },
      );
  }
}
