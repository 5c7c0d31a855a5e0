import { z } from "zod";
import { defineMessage } from "./codec.ts";
import { identifier, uint } from "./fields.ts";

/**
 * Wire kinds of the failover request (issue #18): a new writer or the operator asks the volume's
 * controller on `custody.v1.failover.<volume>` to record a failover in the control log, and the
 * controller answers with the plan it committed or a typed refusal. Strict objects: an unknown
 * field is refused.
 */

const MAX_LANES = 64;
/** Lane → sequence, at most one entry per lane of a volume. */
const laneSeqs = z
  .record(identifier, uint)
  .refine((m) => Object.keys(m).length <= MAX_LANES, { message: `at most ${MAX_LANES} lanes` });

/**
 * `failover-request` v1: record a failover of `lanes` of `volume` to writer term `term`, continuing from
 * `recoveredCut`.
 */
export const failoverRequestSpec = defineMessage({
  kind: "failover-request",
  version: 1,
  schema: z.strictObject({
    volume: identifier,
    lanes: z.array(identifier).min(1).max(MAX_LANES),
    term: uint,
    recoveredCut: laneSeqs,
  }),
  maxBytes: 8 * 1024,
});
export type WireFailoverRequest = z.infer<typeof failoverRequestSpec.schema>;

/** The committed plan (actors/controller/failover.ts `FailoverPlan`). */
const plan = z.strictObject({
  term: uint,
  recoveredCut: laneSeqs,
  oldHead: laneSeqs,
  firstSeq: laneSeqs,
  failoverSeq: laneSeqs,
  controlSeq: laneSeqs,
});

/**
 * `failover-answer` v1: `{ok: true, plan}`, or `{ok: false, code, message}` when the controller refused (nothing
 * committed by the refused step).
 */
export const failoverAnswerSpec = defineMessage({
  kind: "failover-answer",
  version: 1,
  schema: z.strictObject({
    ok: z.boolean(),
    plan: plan.optional(),
    code: z.string().max(64).optional(),
    message: z.string().max(1024).optional(),
  }),
  maxBytes: 32 * 1024,
});
export type WireFailoverAnswer = z.infer<typeof failoverAnswerSpec.schema>;
