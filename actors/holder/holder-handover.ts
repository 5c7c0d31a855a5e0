import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { encodeMessage, encodeTransferOffer, transferSubject, unitSpec } from "../../protocol/index.ts";
import { laneKey } from "./holder-config.ts";
import type { HolderCore } from "./holder-core.ts";

/**
 * A fenced holder's last act (issue #46: one identity, one process). When the control log admits
 * a newer incarnation of this holder — started elsewhere, with its own, empty state — this one
 * stops serving and hands what it still retains to the newer one: ordinary transfer offers on its
 * own transfer subject, which, once this process has unsubscribed, only the newer incarnation
 * hears. The newer one checks and admits them like any transfer (digests, the writer's
 * attestations, arena space; what it already holds is skipped) and receipts them under its own
 * incarnation. Without this, units the writer forgot because this incarnation had receipted them,
 * and that no other holder keeps, would exist nowhere the control log counts.
 *
 * It reads from RAM and from the spill stream (still open: the core was stopped with keepSpill),
 * and never releases, receipts or forwards anything itself.
 */

/** Units per read from a lane (a page; the offers are then cut by bytes). */
const PAGE_UNITS = 256;

/** Offers everything retained to the newer incarnation; resolves with the units offered. */
export async function handOver(core: HolderCore): Promise<number> {
  const { transport } = core.io;
  const me = core.config.holderId;
  // Half the server's max_payload leaves room for the offer's framing and attestations.
  const maxOfferBytes = Math.floor((transport.maxPayloadBytes?.() ?? 1024 * 1024) / 2);
  let offered = 0;
  let offerId = 0;
  for (const hl of core.lanes.values()) {
    let left = hl.obligations.retained;
    while (!left.isEmpty) {
      const page = await hl.unitsPage(core.spillStream, left, PAGE_UNITS, maxOfferBytes);
      if (page.units.length === 0) break;
      for (const chunk of byBytes(page.units, maxOfferBytes)) {
        const units = chunk.map((u) => encodeMessage(unitSpec, { ...u, payload: new Uint8Array(u.payload), digest: new Uint8Array(u.digest) }));
        const tokens = chunk.map((u) => page.attestations.get(u.firstSeq)).filter((t): t is string => t !== undefined);
        transport.publish(transferSubject(me), encodeTransferOffer({ from: me, to: me, volume: hl.volume, lane: hl.lane, offerId: ++offerId, units }, tokens));
        offered += chunk.length;
      }
      if (page.complete) break;
      // Pages go by a cursor: the highest first sequence returned (see HolderLane.unitsPage).
      const cursor = Math.max(...page.units.map((u) => u.firstSeq));
      left = left.intersect(RangeSet.of(cursor + 1, Number.MAX_SAFE_INTEGER));
    }
    core.note({ type: "transfer_offered", lane: laneKey(hl.volume, hl.lane), to: me, seqs: hl.obligations.retained.toString() });
  }
  await transport.flush();
  core.counters.inc("handover_offered_units", offered);
  return offered;
}

/** `units` cut into runs of at most `maxBytes` payload bytes each (a unit larger than that travels alone). */
function byBytes(units: readonly TransportUnit[], maxBytes: number): TransportUnit[][] {
  const out: TransportUnit[][] = [];
  let cur: TransportUnit[] = [];
  let bytes = 0;
  for (const u of units) {
    if (cur.length > 0 && bytes + u.payload.byteLength > maxBytes) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(u);
    bytes += u.payload.byteLength;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
