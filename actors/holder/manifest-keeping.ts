import { unitSubject, type LaneManifestMessage } from "../../transport/protocol/index.ts";
import { SENDER_HEADER } from "../../transport/index.ts";
import type { HolderContext } from "./holder-context.ts";
import type { HolderLane } from "./holder-lane.ts";

/**
 * A `lane-manifest` message (`m`, decoded from `data`) on lane `key`'s unit subject: checked (our
 * volume, naming our lane, not from a writer term older than the lane's), kept beside the lane and
 * forwarded as it came to the lane's edges. A refusal is counted and changes nothing. Returns
 * true when it was kept (the lane's next receipt should list it).
 */
export function keepManifest(
  h: HolderContext,
  key: string,
  hl: HolderLane,
  m: LaneManifestMessage,
  data: Uint8Array,
): boolean {
  if (m.volume !== hl.volume || !m.cut.some(([l]) => l === hl.lane))
    return (void h.reject("manifest_wrong_lane", key), false);
  if (m.term < hl.log.term) return (void h.reject("manifest_stale_term", key), false);
  if (!hl.manifests.add({ lsn: m.lsn, term: m.term, cut: m.cut })) return false;
  h.counters.inc("manifest_kept");
  // Downstream holders of this lane keep it beside their copies too.
  for (const edge of hl.edges.keys())
    h.ports.transport.publish(unitSubject(edge, hl.volume, hl.lane), data, {
      headers: { [SENDER_HEADER]: h.config.holderId },
    });
  return true;
}
