import { z } from "zod";
import { defineMessage } from "./codec.ts";
import { bytes, identifier, seqRanges, timestampMs, uint } from "./fields.ts";

/**
 * Wire kinds of the repair protocol (issue #18): a repair task asks its volume's controller on
 * `custody.v1.repair.<volume>.<op>` for the state it reads and for the commits it needs (the
 * controller checks and commits them itself), and a controller hands a whole repair to a worker on
 * `custody.v1.repair-task.<volume>`. Every body is a strict object: an unknown field is refused.
 */

const ranges = seqRanges(4096);
const lanes = z.array(identifier).min(1).max(64);
const holders = z.array(identifier).max(256);
/** Seconds of an estimate; null stands for "infinite" (no bandwidth), which msgpack-safe schemas refuse. */
const seconds = z.number().nonnegative().nullable();

/** The replacement a repair admits (`admit_holder`). */
const admission = z.strictObject({
  holderId: identifier,
  incarnation: uint,
  publicKey: bytes,
  failureDomain: z.string().min(1).max(256),
});

/** `repair-view-request` v1 (op `view`): the controller's state of `lanes` as the repair reads it. */
export const repairViewRequestSpec = defineMessage({
  kind: "repair-view-request",
  version: 1,
  schema: z.strictObject({ repairId: identifier, lanes }),
  maxBytes: 8 * 1024,
});

const perHolderRanges = z.array(z.strictObject({ holder: identifier, ranges })).max(256);

/** `repair-view` v1: the answer to `repair-view-request` (see actors/repair/repair-port.ts `RepairView`). */
export const repairViewSpec = defineMessage({
  kind: "repair-view",
  version: 1,
  schema: z.strictObject({
    holders: z.array(z.strictObject({ holderId: identifier, status: identifier, incarnation: uint })).max(1024),
    lanes: z
      .array(z.strictObject({ lane: identifier, released: perHolderRanges, responsible: perHolderRanges }))
      .max(64),
    holdings: z
      .array(
        z.strictObject({
          holderId: identifier,
          incarnation: uint,
          lane: identifier,
          retained: ranges,
          issuedAt: timestampMs,
        }),
      )
      .max(4096),
    staleAfterMs: uint,
    recovery: z.strictObject({
      destination: z.string().max(256),
      detectSec: z.number().nonnegative(),
      authorizeSec: z.number().nonnegative(),
      acquireCapacitySec: z.number().nonnegative(),
      persistSec: z.number().nonnegative(),
      validateSec: z.number().nonnegative(),
    }),
  }),
  maxBytes: 1024 * 1024,
});
export type WireRepairView = z.infer<typeof repairViewSpec.schema>;

/** `repair-admit` v1 (op `admit`): commit `admit_holder` for the replacement this repair was given. */
export const repairAdmitSpec = defineMessage({
  kind: "repair-admit",
  version: 1,
  schema: z.strictObject({ repairId: identifier, replacement: admission }),
  maxBytes: 4 * 1024,
});

/** `repair-activate` v1 (op `activate`): move `fromHolder`'s responsibility within `ranges` of `lane` to `toHolder`. */
export const repairActivateSpec = defineMessage({
  kind: "repair-activate",
  version: 1,
  schema: z.strictObject({
    repairId: identifier,
    transferId: identifier,
    lane: identifier,
    fromHolder: identifier,
    toHolder: identifier,
    ranges,
  }),
  maxBytes: 128 * 1024,
});

/** `repair-protect` v1 (op `protect`): refuse releases of `ranges` of `lane` while the repair reads them. */
export const repairProtectSpec = defineMessage({
  kind: "repair-protect",
  version: 1,
  schema: z.strictObject({ repairId: identifier, id: identifier, lane: identifier, ranges }),
  maxBytes: 128 * 1024,
});

/** `repair-unprotect` v1 (op `unprotect`): end the protection `id` of this repair. */
export const repairUnprotectSpec = defineMessage({
  kind: "repair-unprotect",
  version: 1,
  schema: z.strictObject({ repairId: identifier, id: identifier }),
  maxBytes: 1024,
});

/** `repair-answer` v1: the controller's answer to a commit or protect request: a sequence, or a typed refusal. */
export const repairAnswerSpec = defineMessage({
  kind: "repair-answer",
  version: 1,
  schema: z.strictObject({
    ok: z.boolean(),
    seq: uint.optional(),
    code: z.string().max(64).optional(),
    message: z.string().max(1024).optional(),
  }),
  maxBytes: 4 * 1024,
});
export type WireRepairAnswer = z.infer<typeof repairAnswerSpec.schema>;

/** `repair-task` v1 on `custody.v1.repair-task.<volume>`: a controller hands one repair to a worker. */
export const repairTaskSpec = defineMessage({
  kind: "repair-task",
  version: 1,
  schema: z.strictObject({
    repairId: identifier,
    volume: identifier,
    lanes,
    failed: holders.min(1),
    replacement: admission,
    bandwidthBytesPerSec: z.number().nonnegative(),
    receiptTimeoutMs: uint.optional(),
  }),
  maxBytes: 16 * 1024,
});
export type WireRepairTask = z.infer<typeof repairTaskSpec.schema>;

/** `repair-outcome` v1: the worker's answer to `repair-task`: its report, or the step that failed. */
export const repairOutcomeSpec = defineMessage({
  kind: "repair-outcome",
  version: 1,
  schema: z.strictObject({
    repairId: identifier,
    report: z
      .strictObject({
        missing: z.array(z.strictObject({ lane: identifier, ranges })).max(64),
        copiedUnits: uint,
        copiedBytes: uint,
        measuredMs: z.number().nonnegative(),
        controlSeq: uint,
        estimate: z.strictObject({
          detectSec: seconds,
          authorizeSec: seconds,
          acquireCapacitySec: seconds,
          transferSec: seconds,
          persistSec: seconds,
          validateSec: seconds,
          missingBytes: uint,
          totalSec: seconds,
        }),
      })
      .optional(),
    failure: z
      .strictObject({ step: z.string().max(64), code: z.string().max(64), message: z.string().max(1024) })
      .optional(),
  }),
  maxBytes: 64 * 1024,
});
export type WireRepairOutcome = z.infer<typeof repairOutcomeSpec.schema>;
