import { z } from "zod";
import { CustodyError, issueText, reportedIssue } from "../../core/index.ts";
import { isIdentifier } from "../../core/index.ts";

/**
 * Holder configuration. A holder needs no volume, no application reads, no decryption keys and no
 * vote: it is told who it is, where it runs, what residency it can honestly offer, where each lane
 * goes next, and how quickly it must batch receipts and flush.
 */

// The identifier rule's home is core/identifier.ts.
const token = z
  .string()
  .refine(isIdentifier, "identifier must be 1-128 characters without '.', '*', '>', whitespace or control characters");
const posInt = z.number().int().positive();
const nonNegInt = z.number().int().nonnegative();

/**
 * Residency a holder may claim in its receipts (one home: core/residency.ts). `disk` needs a spill stream;
 * `protected_ram` needs evidence.
 */
export { Residency as HolderResidency } from "../../core/index.ts";

/** Protected-RAM evidence as measured on the host; every field is required (no default is evidence). */
export const protectedRamEvidenceSchema = z.strictObject({
  protectedBytes: nonNegInt,
  /** Battery health 0..1 as reported by the controller. */
  batteryHealth: z.number().min(0).max(1),
  holdUpMs: nonNegInt,
  autonomousPreservation: z.boolean(),
  drainBytesPerSec: posInt,
  detectionMs: nonNegInt,
  persistenceCompletionMs: nonNegInt,
  marginMs: nonNegInt,
  /** Wall-clock ms when this evidence was measured; older than `maxEvidenceAgeMs` is stale. */
  measuredAt: nonNegInt,
  capabilityGeneration: nonNegInt,
  /**
   * A drain target (or link) this host shares: on a power event every sharer drains at the same
   * moment and they split its capacity, so this host can count on at most `capacityBytesPerSec /
   * sharers` (see policies/protected-ram.ts, the same bound `custody admit` applies).
   */
  sharedDrain: z.strictObject({ target: z.string().min(1), capacityBytesPerSec: posInt, sharers: posInt }).optional(),
});
export type ProtectedRamEvidence = z.infer<typeof protectedRamEvidenceSchema>;

/** One lane this holder serves, and the holders it forwards that lane to (fan-out). */
export const laneConfigSchema = z.strictObject({
  volume: token,
  lane: token,
  downstream: z.array(token).default([]),
  /** Senders allowed to push this lane into us (upstream holders or the volume writer). */
  upstream: z.array(token).min(1),
  /**
   * What this lane's units are (issue #22): `raw` (the original log) or `coalesced` (a writer's
   * derived lane, one unit per window): its receipts then say `coalesced` with `sourceCutSeq`.
   */
  representation: z.enum(["raw", "coalesced"]).default("raw"),
});
export type LaneConfig = z.infer<typeof laneConfigSchema>;

export const holderConfigSchema = z.strictObject({
  holderId: token,
  /**
   * Test-only when a state directory is given: the incarnation is claimed from the holder's state
   * directory (see incarnation.ts) and a number given here must be above every one seen there.
   * Without a state directory (in-process tests) it is required.
   */
  incarnation: nonNegInt.optional(),
  site: z.strictObject({ region: token, az: token, host: token }),
  residency: z.array(z.enum(["ram", "protected_ram", "disk"])).min(1),
  lanes: z.array(laneConfigSchema).min(1),
  arena: z.strictObject({
    segmentBytes: posInt.default(1 << 20),
    limitBytes: posInt,
    /** Bytes one upstream may have granted-but-unused at once. */
    maxOutstandingCredit: posInt.default(4 << 20),
    /** Capacity is secured in steps of this many bytes up to `limitBytes` (default: all at once). */
    incrementBytes: posInt.optional(),
    /**
     * An open segment seals after this long (it can then be released, spilled or transferred
     * whole). Receipts do not wait for it: units in an open segment are receipted on their own deadline.
     */
    maxOpenDelayMs: posInt.default(50),
    /** Units larger than this are refused as oversized. */
    maxUnitBytes: posInt.default(1 << 20),
  }),
  receipts: z.strictObject({
    maxUnits: posInt.default(64),
    maxDelayMs: posInt.default(5),
  }),
  flush: z
    .strictObject({
      intervalMs: posInt,
      deadlineMs: posInt,
      /**
       * The spill stream starts a new file at this size; a file with nothing left in custody is deleted. Default 64
       * MiB.
       */
      rotateBytes: posInt.optional(),
    })
    .optional(),
  protectedRam: z
    .strictObject({
      evidence: protectedRamEvidenceSchema,
      maxEvidenceAgeMs: posInt,
      minBatteryHealth: z.number().min(0).max(1),
    })
    .optional(),
  /**
   * Gap repair: a unit an edge has not receipted this long after its last send is sent again
   * (NATS delivers at most once). Default 1000 ms; an edge that restarted gets its units at once.
   */
  resendAfterMs: posInt.default(1000),
  /** A neighbor holder that may take custody by transfer under memory pressure. */
  transferNeighbor: token.optional(),
  /** Arena fill ratio above which the holder evacuates (spill or transfer). */
  pressureRatio: z.number().gt(0).lte(1).default(0.8),
  epoch: nonNegInt.default(0),
  policyGeneration: nonNegInt.default(0),
  /**
   * Test-only fault switches, for integration tests that must see a misbehaving holder caught;
   * never set in a deployment. `dropRetained`: the holder answers retention audits as one that
   * dropped the payload bytes it keeps receipting (it still knows every unit's header).
   */
  faults: z.strictObject({ dropRetained: z.boolean().default(false) }).optional(),
});
/** Configuration as given (defaults optional). */
export type HolderConfigInput = z.input<typeof holderConfigSchema>;
/** Configuration after validation, with every default filled in and the incarnation claimed. */
export type HolderConfig = z.infer<typeof holderConfigSchema> & { readonly incarnation: number };

/** Thrown for an invalid holder configuration; `detail.field` is the dotted path of the first bad field. */
export class HolderConfigError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_holder_config", message, detail);
  }
}

/**
 * Validates and completes a configuration. Throws HolderConfigError naming the first bad field.
 * Consistency rules: `disk` residency needs a flush policy; `protected_ram` needs evidence.
 */
export function parseHolderConfig(input: HolderConfigInput): z.infer<typeof holderConfigSchema> {
  const r = holderConfigSchema.safeParse(input);
  if (!r.success) {
    const issue = reportedIssue(r.error.issues);
    const field = issue.path.join(".");
    throw new HolderConfigError(`invalid holder config: ${issueText(issue)}`, { field });
  }
  const c = r.data;
  if (c.residency.includes("disk") && !c.flush) {
    throw new HolderConfigError("disk residency requires a flush policy", { field: "flush" });
  }
  if (c.residency.includes("protected_ram") && !c.protectedRam) {
    throw new HolderConfigError("protected_ram residency requires protected-RAM evidence", { field: "protectedRam" });
  }
  if (c.arena.maxUnitBytes > c.arena.segmentBytes) {
    throw new HolderConfigError("maxUnitBytes must fit in one segment", { field: "arena.maxUnitBytes" });
  }
  return c;
}

/** Key of one lane inside a holder, `volume/lane`: core/lane-key.ts `holderLaneKey` (not the arenas' `laneKey`). */
export { holderLaneKey as laneKey } from "../../core/index.ts";
