import type { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { encodeMessage } from "../../transport/protocol/index.ts";
import { auditDigest } from "../../policies/index.ts";
import type { HolderCore } from "./holder-core.ts";
import { retentionAnswerSpec } from "../../transport/protocol/index.ts";

/**
 * The holder's side of a retention audit on `custody.v1.audit.<holder>`: it reads the challenged
 * units from RAM or, for spilled segments, from its spill stream, and answers with the keyed
 * digest over their bytes (policies/audit-digest.ts) and the challenged sequences they cover.
 * Sequences it no longer holds are simply not covered: the controller judges that against what the
 * holder still claims.
 */

/**
 * Answers one challenge the machine's step accepted (holder-read-steps.ts) for lane `key`,
 * asynchronously when disk is read.
 */
export function answerChallenge(
  core: HolderCore,
  key: string,
  challenge: { readonly nonce: Uint8Array; readonly seqs: RangeSet },
  msg: InboundMessage,
): void {
  const { seqs } = challenge;
  const span = core.spans.startSpan("holder.audit_answer", {
    attributes: { "custody.lane": key, "custody.seqs": seqs.toString() },
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
  const hl = core.lanes.get(key);
  // A lane not served here gets no answer (see holder-read-steps.ts).
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
