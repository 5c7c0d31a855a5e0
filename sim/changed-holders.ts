import type { WorldObservation } from "./invariants.ts";

/**
 * The holders of `obs` whose custody changed since `lastChecked`. RangeSets are immutable: a
 * holder whose sets are the same objects as at the last check is unchanged, so re-checking it
 * cannot find anything new (both runners check only these).
 */
export function changedSince(
  obs: WorldObservation,
  lastChecked: ReadonlyMap<string, WorldObservation["holders"][number]>,
): WorldObservation["holders"] {
  return obs.holders.filter((h) => {
    const prev = lastChecked.get(h.id);
    return (
      prev === undefined ||
      prev.ram !== h.ram ||
      prev.disk !== h.disk ||
      prev.released !== h.released ||
      prev.ledger !== h.ledger ||
      prev.granted !== h.granted
    );
  });
}
