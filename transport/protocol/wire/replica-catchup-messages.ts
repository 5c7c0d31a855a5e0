import { z } from "zod";
import { defineMessage } from "./codec.ts";
import { bytes, identifier, uint } from "./fields.ts";

/**
 * Wire kinds of replica catch-up (issue #18), request/reply on
 * `custody.v1.replica-catchup.<volume>.<replica>`, answered by the primary volume's catch-up
 * service. Pull and bounded: `replica-catchup-begin` opens a session and is answered with the plan;
 * `replica-catchup-next` asks for the items from `cursor` on and is answered with one chunk. Block
 * data only crosses the bus sealed under the volume's data key. Any refusal is a
 * `replica-catchup-refused`. Every body is a strict object: an unknown field is refused.
 */

/** The recovery decisions of volume/recovery-decision.ts, as they travel. */
const decision = z.enum(["no_recovery", "catch_up", "delta_rebuild", "full_rebuild"]);

/** `replica-catchup-begin` v1: the replica's durable position; the primary decides how to bring it to the head. */
export const replicaCatchupBeginSpec = defineMessage({
  kind: "replica-catchup-begin",
  version: 1,
  schema: z.strictObject({ replica: identifier, volume: identifier, flushedLsn: uint }),
  maxBytes: 1024,
});

/** `replica-catchup-plan` v1: the answer to `begin` — the decision and what the session will send. */
export const replicaCatchupPlanSpec = defineMessage({
  kind: "replica-catchup-plan",
  version: 1,
  schema: z.strictObject({
    session: identifier,
    decision,
    reason: z.string().max(512),
    replicaFlushedLsn: uint,
    walStart: uint,
    walHead: uint,
    /** The snapshot's checkpoint LSN, present when blocks are sent (delta or full rebuild, or the WAL fallback). */
    checkpointLsn: uint.optional(),
    /** Items 0..deltaBlocks-1 are snapshot blocks; the rest are WAL records (a large one in several pieces). */
    deltaBlocks: uint,
    walRecords: uint,
    items: uint,
    fellBackToDelta: z.boolean(),
  }),
  maxBytes: 2 * 1024,
});
export type WireCatchupPlan = z.infer<typeof replicaCatchupPlanSpec.schema>;

/**
 * `replica-catchup-next` v1: the items of `session` from `cursor` on. Asking for the same cursor again is allowed (a
 * lost reply).
 */
export const replicaCatchupNextSpec = defineMessage({
  kind: "replica-catchup-next",
  version: 1,
  schema: z.strictObject({ replica: identifier, volume: identifier, session: identifier, cursor: uint }),
  maxBytes: 1024,
});

/**
 * `replica-catchup-chunk` v1: items `cursor..cursor+count-1`, sealed (transport/protocol/wire/unit-payload.ts)
 * under the volume's data key with the session and cursor as associated data; `done` on the last.
 */
export const replicaCatchupChunkSpec = defineMessage({
  kind: "replica-catchup-chunk",
  version: 1,
  schema: z.strictObject({ session: identifier, cursor: uint, count: uint, done: z.boolean(), sealed: bytes }),
  // The default NATS max_payload; the service keeps a chunk's data well under it.
  maxBytes: 1024 * 1024,
});

/** `replica-catchup-refused` v1: a typed refusal of any request (nothing changed on the primary). */
export const replicaCatchupRefusedSpec = defineMessage({
  kind: "replica-catchup-refused",
  version: 1,
  schema: z.strictObject({ code: z.string().min(1).max(64), message: z.string().max(1024) }),
  maxBytes: 2 * 1024,
});
