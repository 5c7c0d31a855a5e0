import { CustodyError } from "../../core/index.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import { decodeMessage, decodeTransferOffer, unitSpec } from "../../transport/protocol/index.ts";
import type { HolderEffect } from "./holder-effects.ts";
import type { HolderPlainState } from "./holder-state.ts";

/**
 * The pure part of the neighbor side of a transfer (`custody.v1.transfer.<holder>`): the offer must
 * be readable and addressed to this holder, and every unit it carries must decode, belong to the
 * offered lane and pass validation (size, digest), or the whole offer is refused and counted —
 * `<code>`/`malformed` for an unreadable offer, `wrong_holder`, `transfer_<code>` or
 * `transfer_invalid` for a unit — before anything changes. What passes goes on as an `admitTransfer`
 * effect: the executor checks writer attestations (it has the keys) and admits within the arena's
 * space. Never changes the state.
 */
export function readTransferOffer(state: HolderPlainState, data: Uint8Array): HolderEffect[] {
  let read;
  try {
    read = decodeTransferOffer(data);
  } catch (err) {
    return [{ type: "count", name: err instanceof CustodyError ? err.code : "malformed" }];
  }
  const { offer, attestations } = read;
  if (offer.to !== state.config.holderId) return [{ type: "count", name: "wrong_holder" }];
  const units: TransportUnit[] = [];
  try {
    for (const b of offer.units) {
      const u = decodeMessage(unitSpec, b) as TransportUnit;
      if (u.volume !== offer.volume || u.lane !== offer.lane)
        throw new CustodyError("wrong_lane", "offered unit belongs to another lane", {});
      units.push(validateTransportUnit(u));
    }
  } catch (err) {
    return [{ type: "count", name: err instanceof CustodyError ? `transfer_${err.code}` : "transfer_invalid" }];
  }
  const { from, volume, lane } = offer;
  return [{ type: "admitTransfer", from, volume, lane, units, tokens: attestations }];
}
