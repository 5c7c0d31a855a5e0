import { unitRecordBytes } from "../../arena/segment.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { encodeMessage, unitSpec } from "../../transport/wire/index.ts";
import type { HolderLane } from "./holder-lane.ts";
import type { Counters } from "../../core/counters.ts";

/**
 * Re-forwards units an edge evidently lost: sequences below the edge's highest receipted one that
 * it still has not receipted at two consecutive refreshes (NATS is at-most-once; custody must not
 * depend on every publish arriving, and units are forwarded and receipted in order, so such a
 * hole is a loss, not a unit in flight). Only RAM-resident units are re-sent; the rest are counted
 * (`retransmit_unavailable`) for repair. Each re-send goes through the edge's own credits.
 */
export function repairEdges(lanes: Iterable<HolderLane>, counters: Counters): void {
  for (const hl of lanes) {
    for (const [edge, sender] of hl.edges) {
      const holes = hl.obligations.holesAt(edge);
      const prev = hl.suspectHoles.get(edge) ?? RangeSet.EMPTY;
      const resend = holes.intersect(prev);
      hl.suspectHoles.set(edge, holes.subtract(resend));
      // Units still queued at our sender are not lost: they wait for the edge's credit.
      if (resend.isEmpty || sender.backlog.units > 0) continue;
      let sent = RangeSet.EMPTY;
      for (const id of hl.arena.segmentsOf(hl.volume, hl.lane)) {
        const seg = hl.arena.describe(id);
        if (!seg.buffer || !seg.seqs().intersects(resend)) continue;
        for (const u of hl.arena.units(id)) {
          if (!resend.covers(u.firstSeq, u.lastSeq)) continue;
          const data = encodeMessage(unitSpec, { ...u, payload: new Uint8Array(u.payload), digest: new Uint8Array(u.digest) });
          sender.send({ data, bytes: unitRecordBytes(u) });
          sent = sent.add(u.firstSeq, u.lastSeq);
          counters.inc("retransmit");
        }
      }
      const missing = resend.subtract(sent);
      if (!missing.isEmpty) counters.inc("retransmit_unavailable", missing.count);
    }
  }
}
