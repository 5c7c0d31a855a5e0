import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/index.ts";
import { auditDigest } from "../../policies/index.ts";
import { laneKey } from "./holder-config.ts";
import type { HolderCore } from "./holder-core.ts";
import { retentionAnswerSpec, retentionChallengeSpec } from "../../transport/protocol/index.ts";

/**
 * The holder's side of a retention audit on `custody.v1.audit.<holder>`: it reads the challenged
 * units from RAM or, for spilled segments, from its spill stream, and answers with the keyed
 * digest over their bytes (policies/audit-digest.ts) and the challenged sequences they cover.
 * Sequences it no longer holds are simply not covered: the controller judges that against what the
 * holder still claims.
 */

/** Answers one challenge (asynchronously when disk is read). Bad or misaddressed challenges get no answer (counted). */
export function answerAudit(core: HolderCore, msg: InboundMessage): void {
  let c;
  try {
    c = decodeMessage(retentionChallengeSpec, msg.data);
  } catch {
    return void core.counters.inc("audit_malformed");
  }
  if (c.holder !== core.config.holderId) return void core.counters.inc("audit_wrong_holder");
  const challenge = c;
  const seqs = RangeSet.fromJSON(challenge.seqs);
  const span = core.spans.startSpan("holder.audit_answer", {
    attributes: { "custody.lane": laneKey(c.volume, c.lane), "custody.seqs": seqs.toString() },
  });
  const answer = (held: readonly TransportUnit[]) => {
    // Test-only fault (config `faults.dropRetained`): the payload is gone, only headers are left.
    const units =
      core.config.faults?.dropRetained === true ? held.map((u) => ({ ...u, payload: new Uint8Array(0) })) : held;
    const d = auditDigest(challenge.nonce, units, seqs);
    core.counters.inc("audit_answered");
    core.counters.inc("audit_bytes_read", d.bytesRead);
    span.setAttribute("custody.covered", d.covered.toString());
    span.end();
    core.io.transport.respond(
      msg,
      encodeMessage(retentionAnswerSpec, {
        holder: core.config.holderId,
        nonce: challenge.nonce,
        covered: d.covered.toJSON(),
        digest: d.digest,
      }),
    );
  };
  const hl = core.lanes.get(laneKey(c.volume, c.lane));
  // A lane not served here gets no answer (as with fetches): a request takes the first reply, and
  // "nothing here" from a holder of another volume under the same id would be taken for this one's.
  if (hl === undefined) {
    span.end();
    return void core.counters.inc("audit_unknown_lane");
  }
  if (seqs.isEmpty) return answer([]);
  hl.unitsPage(core.spillStream, seqs, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)
    .then((r) => answer(r.units))
    .catch(() => {
      core.counters.inc("audit_unreadable");
      if (span.isRecording()) span.end();
    });
}
