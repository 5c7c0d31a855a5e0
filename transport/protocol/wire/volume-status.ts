import { z } from "zod";
import { defineMessage } from "./codec.ts";
import * as wireFields from "./fields.ts";

/**
 * `volume-status` v1 on `custody.v1.status.<volume>`: the controller's truth about one volume —
 * per named scenario, the cut that survives, what committed work is lost (sequences, bytes, age
 * from source commit timestamps), time to usable at the destination (RTO, null = unbounded), and
 * how fresh the receipt evidence behind it is.
 */
const laneSeq = z.tuple([wireFields.identifier, z.number().int()]);
const scenarioStatus = z.object({
  name: z.string().max(256),
  kind: z.enum(["scenario", "timeline"]),
  required: z.boolean(),
  cut: z.array(laneSeq).max(256).nullable(),
  lostSeqs: wireFields.uint,
  lostBytes: wireFields.uint,
  oldestLostAgeMs: z.number().nonnegative(),
  rtoSec: z.number().nonnegative().nullable(),
  deadlineSec: z.number().nonnegative(),
  meetsDeadline: z.boolean(),
  destination: z.string().max(128),
  evidence: z.string().max(32),
  contributors: z.array(z.string().max(128)).max(64),
  flags: z.array(z.string().max(64)).max(16),
  /**
   * The loss split over time (issue #47; policies/steady-verdict.ts): of `lostSeqs`, the writes
   * still within their receipt deadline (`inFlightSeqs`) and those past it (`overdueSeqs`, lost),
   * and since when the lost ones exceed the allowance (`lossSinceMs`, null while they do not).
   * Optional (added later): older readers ignore them, a status computed by older code omits them.
   */
  inFlightSeqs: wireFields.uint.optional(),
  overdueSeqs: wireFields.uint.optional(),
  lossSinceMs: wireFields.timestampMs.nullable().optional(),
  /** Added after v1's first release: readers that predate them ignore both. */
  verdict: z.enum(["met", "not_met"]).optional(),
  reasons: z.array(z.string().max(256)).max(16).optional(),
  /**
   * What makes a cut across lanes consistent: the consistency manifest it is (`manifest`), else the
   * base it is (`base`). Present for volumes of more than one lane only. Optional (added later):
   * older readers ignore both, older controllers omit them.
   */
  manifest: z.string().max(512).nullable().optional(),
  base: z.string().max(512).nullable().optional(),
  /**
   * The stream the cut comes from (issue #22): `raw`, or `coalesced` (a derived image; the cut is
   * a window end and the raw records before it are not held). Optional (added later): older
   * readers ignore it, and a document without it speaks of the raw stream.
   */
  stream: z.enum(["raw", "coalesced"]).optional(),
  /**
   * What of the control plane survives the scenario (issue #45): the roles it loses (`quorum`,
   * `controller`, `key authority`), the control log's surviving replicas of how many and the
   * majority needed, the volume's surviving controllers, whether a key authority survives.
   * Optional (added later): older readers ignore it; a controller whose topology does not place
   * the control plane omits it.
   */
  controlPlane: z
    .object({
      lost: z.array(z.enum(["quorum", "controller", "key authority"])).max(3),
      logReplicas: z.object({
        surviving: z.array(z.string().max(128)).max(16),
        of: wireFields.uint,
        quorum: wireFields.uint,
      }),
      controllers: z.array(z.string().max(128)).max(64),
      keyAuthority: z.boolean(),
    })
    .optional(),
});
/** Lifecycle of the repair of one declared failure, as an enumeration. */
export const RepairStatusState = { needed: "needed", running: "running", done: "done", failed: "failed" } as const;
export type RepairStatusState = (typeof RepairStatusState)[keyof typeof RepairStatusState];

const repairStatus = z.object({
  /** Control-log sequence of the declare-failure event (the repair's key). */
  failureSeq: wireFields.uint,
  state: z.enum([
    RepairStatusState.needed,
    RepairStatusState.running,
    RepairStatusState.done,
    RepairStatusState.failed,
  ]),
  failed: z.array(z.string().max(128)).max(1024),
  replacement: z.string().max(128).optional(),
  /** Measured wall time of the repair task, next to the policy engine's estimate (null = unbounded). */
  measuredMs: z.number().nonnegative().optional(),
  estimateMs: z.number().nonnegative().nullable().optional(),
  copiedBytes: wireFields.uint.optional(),
  reason: z.string().max(512).optional(),
  /** Bandwidth the estimate assumed and whether a route measurement gave it (absent from older controllers). */
  bandwidthBytesPerSec: z.number().nonnegative().optional(),
  bandwidthSource: z.enum(["measured", "configured"]).optional(),
});
/** One repair line of the status document. */
export type RepairStatus = z.infer<typeof repairStatus>;

const usd = z.number().nonnegative();
const spendStatus = z.object({
  ceilingUsd: usd,
  periodStartMs: wireFields.timestampMs,
  projectedUsd: usd,
  overCeiling: z.boolean(),
  budgets: z
    .array(
      z.object({
        kind: z.string().max(32),
        budgetBytes: z.number().nonnegative(),
        spentBytes: z.number().nonnegative(),
        budgetUsd: usd,
        spentUsd: usd,
      }),
    )
    .max(8),
  steadyLegs: z
    .array(
      z.object({ from: z.string().max(128), to: z.string().max(128), charge: z.string().max(128), usdPerGB: usd, usd }),
    )
    .max(64),
  refusedOptional: wireFields.uint,
  /** Optional copies refused in the latest pass: scenarios they serve, and why. */
  deferred: z
    .array(
      z.object({
        target: z.string().max(128),
        lane: z.string().max(128),
        seqs: z.string().max(4096),
        scenarios: z.array(z.string().max(256)).max(64),
        reason: z.string().max(64),
      }),
    )
    .max(64),
});
const auditStatus = z.object({
  holder: z.string().max(128),
  state: z.enum(["pending", "passed", "failed"]),
  lastAuditAtMs: wireFields.timestampMs.nullable(),
  passed: wireFields.uint,
  failed: wireFields.uint,
  timedOut: wireFields.uint,
  voided: wireFields.uint,
});
/**
 * A holder incarnation that still sent receipts after a newer incarnation of the same holder was
 * admitted (issue #46): a process that should have stopped — fenced processes exit, so one seen
 * here is stuck, or cannot read the control log. Its receipts count for nothing.
 */
const fencedStatus = z.object({
  holder: z.string().max(128),
  incarnation: z.number().int().nonnegative(),
  /** The incarnation the control log admitted since. */
  admitted: z.number().int().nonnegative(),
  /** How long ago its last receipt arrived (ms). */
  lastSeenAgeMs: z.number().nonnegative(),
  /** Receipt batches it sent since the controller started noticing. */
  batches: z.number().int().nonnegative(),
});
/** One line of the status document's `fenced` section. */
export type FencedStatus = z.infer<typeof fencedStatus>;

/** One holder's line in the status document's `audits` section. */
export type AuditStatus = z.infer<typeof auditStatus>;

/** The spend section of the status document. */
export type SpendStatus = z.infer<typeof spendStatus>;

export const volumeStatusSpec = defineMessage({
  kind: "volume-status",
  version: 1,
  schema: z.object({
    volume: wireFields.identifier,
    controller: wireFields.identifier,
    asOfMs: wireFields.timestampMs,
    controlSeq: wireFields.uint,
    acknowledged: z.array(laneSeq).max(256),
    /** The cut every required scenario keeps (lane-wise minimum); null when one keeps nothing. */
    survivingCut: z.array(laneSeq).max(256).nullable(),
    scenarios: z.array(scenarioStatus).max(128),
    evidence: z.array(z.object({ holder: z.string().max(128), ageMs: z.number(), stale: z.boolean() })).max(256),
    releasesCommitted: wireFields.uint,
    /** Declared failures and their repairs (absent in documents of controllers that predate it). */
    repairs: z.array(repairStatus).max(256).optional(),
    /** Spend this period under the configured ceiling and budgets (absent without a `spend` section). */
    spend: spendStatus.optional(),
    /** Per holder, its retention audits (absent when audits are off): `failed` means its claims do not count. */
    audits: z.array(auditStatus).max(256).optional(),
    /** Superseded holder incarnations still speaking (absent when there is none): see `fencedStatus`. */
    fenced: z.array(fencedStatus).max(64).optional(),
  }),
  maxBytes: 512 * 1024,
});
export type VolumeStatus = z.infer<typeof volumeStatusSpec.schema>;
