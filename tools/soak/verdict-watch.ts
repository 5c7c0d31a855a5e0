import { decodeMessage, statusSubject, volumeStatusSpec, type VolumeStatus } from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";

/** One change of a scenario's verdict between two consecutive status documents. */
export interface VerdictFlap {
  readonly atMs: number;
  readonly scenario: string;
  readonly from: string;
  readonly to: string;
  readonly reasons: readonly string[];
}

/**
 * Counts, over consecutive status documents of one volume, every change of any scenario's verdict
 * (issue #47: on a deployment no fault touches there must be none), and the most writes a
 * scenario had in flight and overdue in any document. Pure bookkeeping; `watchVerdicts` feeds it.
 */
export class VerdictTally {
  documents = 0;
  /** Documents in which some scenario was not met. */
  notMetDocuments = 0;
  inFlightMax = 0;
  overdueMax = 0;
  readonly flaps: VerdictFlap[] = [];
  private readonly last = new Map<string, string>();

  note(doc: VolumeStatus): void {
    this.documents++;
    if (doc.scenarios.some((s) => s.verdict !== "met")) this.notMetDocuments++;
    for (const s of doc.scenarios) {
      this.inFlightMax = Math.max(this.inFlightMax, s.inFlightSeqs ?? 0);
      this.overdueMax = Math.max(this.overdueMax, s.overdueSeqs ?? 0);
      const verdict = s.verdict ?? "none";
      const key = `${s.kind}:${s.name}`;
      const before = this.last.get(key);
      if (before !== undefined && before !== verdict)
        this.flaps.push({ atMs: doc.asOfMs, scenario: s.name, from: before, to: verdict, reasons: s.reasons ?? [] });
      this.last.set(key, verdict);
    }
  }
}

/** Subscribes to `volume`'s status documents and tallies them until `stop()`; an undecodable document is skipped. */
export function watchVerdicts(transport: Transport, volume: string): { tally: VerdictTally; stop(): void } {
  const tally = new VerdictTally();
  const sub = transport.subscribe(statusSubject(volume), (m) => {
    try {
      tally.note(decodeMessage(volumeStatusSpec, m.data));
    } catch {
      // not a status document of this volume: nothing to tally
    }
  });
  return { tally, stop: () => sub.unsubscribe() };
}
