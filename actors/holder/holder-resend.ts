import { unitRecordBytes } from "../../arena/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/index.ts";
import { dueResends, noteResent, noteSent } from "../hop/index.ts";
import type { HolderContext } from "./holder-context.ts";
import type { HolderLane } from "./holder-lane.ts";
import type { LoadedUnit } from "./holder-ports.ts";

/**
 * Gap repair towards the holder's edges: re-sends to each edge, in order and within its credits,
 * the retained units it has not receipted a while after their last send (or at all, after it
 * restarted). RAM-resident units go at once; units whose segment was spilled are read back from
 * the spill stream first (`resend.loaded`, then `resendLoaded`).
 */
export function resendDue(h: HolderContext): void {
  const now = h.ports.clock.now();
  for (const [key, hl] of h.lanes) {
    for (const d of dueResends(hl, now, h.config.resendAfterMs)) {
      let sent = RangeSet.EMPTY;
      // Each unit goes with the writer attestation stored beside it, however old the unit is.
      for (const { unit: u, attestation } of hl.ramUnits(d.seqs)) {
        d.sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u), attestation });
        noteSent(hl, d.edge, u.firstSeq, u.lastSeq, now);
        sent = sent.add(u.firstSeq, u.lastSeq);
      }
      if (!sent.isEmpty) h.counters.inc("retransmit", sent.count);
      noteResent(hl, d.edge);
      const onDisk = d.seqs.subtract(sent);
      if (!onDisk.isEmpty) resendFromDisk(h, key, hl, d.edge, onDisk);
    }
  }
}

/** Reads spilled units of `seqs` back and hands them to the actor as `resend.loaded`. */
function resendFromDisk(h: HolderContext, key: string, hl: HolderLane, edge: string, seqs: RangeSet): void {
  const spill = h.spill();
  if (spill === undefined) return void h.counters.inc("retransmit_unavailable", seqs.count);
  // Mark them sent now, so the next refresh does not read the same records again meanwhile.
  noteSent(hl, edge, seqs.min!, seqs.max!, h.ports.clock.now());
  void hl.diskUnits(spill, seqs).then(
    (units) => h.send({ type: "resend.loaded", lane: key, edge, units }),
    () => h.counters.inc("retransmit_unreadable"),
  );
}

/**
 * Units read back from disk for an edge: sent in order within its credits, each with the writer
 * attestation its spill record kept.
 */
export function resendLoaded(h: HolderContext, key: string, edge: string, units: readonly LoadedUnit[]): void {
  const hl = h.lanes.get(key);
  const sender = hl?.edges.get(edge);
  if (hl === undefined || sender === undefined) return;
  const now = h.ports.clock.now();
  const pending = hl.obligations.pendingFor(edge);
  for (const { unit: u, attestation } of units) {
    if (!pending.covers(u.firstSeq, u.lastSeq)) continue; // receipted or released meanwhile
    sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u), attestation });
    noteSent(hl, edge, u.firstSeq, u.lastSeq, now);
    h.counters.inc("retransmit");
  }
}
