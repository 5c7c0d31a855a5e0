import { RangeSet } from "../../lanes/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import {
  decodeMessage,
  parseSubjectOf,
  retentionChallengeSpec,
  unitFetchSpec,
} from "../../transport/protocol/index.ts";
import { laneKey } from "./holder-config.ts";
import type { HolderEffect } from "./holder-effects.ts";
import type { HolderPlainState } from "./holder-state.ts";

/**
 * The pure part of the holder's read services: which fetch requests and retention challenges it
 * answers at all. A request that cannot be read, names another holder, or a lane not served here
 * gets no answer, only a count (a request takes the first reply, and "nothing here" from a holder
 * of another volume under the same id would pass for the real holder's custody). What is answered,
 * read from RAM or the spill stream, is the executor's (fetch-service.ts, audit-responder.ts).
 * Neither changes the state.
 */

/** Effects for one request on `custody.v1.fetch.<holder>.<volume>`. */
export function readFetchRequest(state: HolderPlainState, msg: InboundMessage): HolderEffect[] {
  let req;
  try {
    req = decodeMessage(unitFetchSpec, msg.data);
  } catch {
    return [{ type: "count", name: "fetch_malformed" }];
  }
  if (req.holder !== state.config.holderId) return [{ type: "count", name: "fetch_wrong_holder" }];
  // The subject's volume is what the server's permissions checked; a body naming another volume
  // would read units the requester may not fetch (see docs/security.md).
  if (volumeOf(msg.subject) !== req.volume) return [{ type: "count", name: "fetch_volume_not_in_subject" }];
  const lane = laneKey(req.volume, req.lane);
  if (state.lanes[lane] === undefined) return [{ type: "count", name: "fetch_unknown_lane" }];
  // Only what comes after the caller's cursor.
  const wanted = RangeSet.fromJSON(req.ranges).intersect(
    RangeSet.of(Math.max(0, req.after + 1), Number.MAX_SAFE_INTEGER),
  );
  return [{ type: "serveFetch", lane, msg, after: req.after, limit: req.limit, wanted }];
}

/** Effects for one challenge on `custody.v1.audit.<holder>`. */
export function readAuditChallenge(state: HolderPlainState, msg: InboundMessage): HolderEffect[] {
  let c;
  try {
    c = decodeMessage(retentionChallengeSpec, msg.data);
  } catch {
    return [{ type: "count", name: "audit_malformed" }];
  }
  if (c.holder !== state.config.holderId) return [{ type: "count", name: "audit_wrong_holder" }];
  const lane = laneKey(c.volume, c.lane);
  if (state.lanes[lane] === undefined) return [{ type: "count", name: "audit_unknown_lane" }];
  return [{ type: "answerAudit", lane, msg, nonce: c.nonce, seqs: RangeSet.fromJSON(c.seqs) }];
}

/** The volume a fetch subject names (undefined for a subject that is not one). */
function volumeOf(subject: string): string | undefined {
  try {
    return parseSubjectOf("fetch", subject).volume;
  } catch {
    return undefined;
  }
}
