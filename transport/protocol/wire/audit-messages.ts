import { z } from "zod";
import { defineMessage } from "./codec.ts";
import * as wireFields from "./fields.ts";

/**
 * Wire kinds of retention audits (request/reply on `custody.v1.audit.<holder>`): the controller's
 * challenge and the holder's answer. See policies/audit-digest.ts for what the digest covers.
 */

const ranges = wireFields.seqRanges(1024);

/** `retention-challenge` v1: prove you hold the units with these sequences of one lane, keyed by a fresh nonce. */
export const retentionChallengeSpec = defineMessage({
  kind: "retention-challenge",
  version: 1,
  schema: z.object({
    holder: wireFields.identifier,
    volume: wireFields.identifier,
    lane: wireFields.identifier,
    nonce: wireFields.fixedBytes(32),
    seqs: ranges,
  }),
  maxBytes: 64 * 1024,
});
export type RetentionChallenge = z.infer<typeof retentionChallengeSpec.schema>;

/** `retention-answer` v1: the keyed digest over the units held, and which challenged sequences they cover. */
export const retentionAnswerSpec = defineMessage({
  kind: "retention-answer",
  version: 1,
  schema: z.object({
    holder: wireFields.identifier,
    nonce: wireFields.fixedBytes(32),
    covered: ranges,
    digest: wireFields.fixedBytes(32),
  }),
  maxBytes: 64 * 1024,
});
export type RetentionAnswer = z.infer<typeof retentionAnswerSpec.schema>;
