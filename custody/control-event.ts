import { Decoder, Encoder } from "@msgpack/msgpack";
import { decodeBounded } from "../transport/protocol/index.ts";
import { createHash } from "node:crypto";
import { z } from "zod";
import { RangeSet } from "../lanes/index.ts";
import { ControlFenceCode, ControlFenceError } from "./control-error.ts";
import { PayloadRepresentation } from "./source-cut.ts";
import { tokenSchema, uintSchema } from "./token.ts";

/** The ordered custody changes a controller may commit. */
export const ControlEventType = {
  create_obligation: "create_obligation",
  admit_holder: "admit_holder",
  prepare_transfer: "prepare_transfer",
  activate_replacement: "activate_replacement",
  release_ranges: "release_ranges",
  release_to_base: "release_to_base",
  retire_holder: "retire_holder",
  policy_change: "policy_change",
  declare_failure: "declare_failure",
  hold_ranges: "hold_ranges",
  end_hold: "end_hold",
  admit_controller: "admit_controller",
  commit_failover: "commit_failover",
  choose_persistence: "choose_persistence",
  claim_lease: "claim_lease",
  renew_lease: "renew_lease",
} as const;
export type ControlEventType = (typeof ControlEventType)[keyof typeof ControlEventType];

/** Control event format versions this code reads and writes. */
export const ControlEventVersion = { v1: 1 } as const;
export type ControlEventVersion = (typeof ControlEventVersion)[keyof typeof ControlEventVersion];

/** The `prevHash` of the first event of a log. */
export const GENESIS_HASH = "0".repeat(64);

/** Why ranges are held in the network: an operator's point-in-time-recovery pin, or a recovery reading them. */
export const HoldKind = { pitr_pin: "pitr_pin", recovery: "recovery" } as const;
export type HoldKind = (typeof HoldKind)[keyof typeof HoldKind];

/** Format versions of the `choose_persistence` body (it carries its own, so it can grow without a new log version). */
export const PersistenceChoiceVersion = { v1: 1 } as const;

/**
 * Format versions of the `admit_holder` and `admit_controller` bodies. The first bodies (v1) carry
 * no version and no volumes, and their bytes are unchanged, so logs written before keep their
 * hashes and fold as before (an admission without volumes is unscoped). A v2 body starts with
 * `2` and ends with the volumes the holder serves or the controller may commit for. A v3
 * `admit_holder` body starts with `3`, names no volumes and ends with the holder's own signed
 * admission request (a re-admission it asked for; see control-scope.ts).
 */
export const AdmissionBodyVersion = { v1: 1, v2: 2, v3: 3 } as const;

/**
 * Format versions of the `claim_lease` and `renew_lease` bodies (they carry their own, like
 * `choose_persistence`). A reader older than these types refuses them as malformed: every reader
 * of a log must be upgraded before a volume gets a standby controller.
 */
export const LeaseBodyVersion = { v1: 1 } as const;

/** Scope of a declared failure. */
export const FailureScope = { holder: "holder", zone: "zone", region: "region" } as const;
export type FailureScope = (typeof FailureScope)[keyof typeof FailureScope];

/**
 * Fields every event carries: where and by whom it was prepared, the topology epoch and policy
 * generation it was prepared under (the fence), and the hash of the event before it (the chain).
 */
export interface ControlEventHeader {
  readonly region: string;
  readonly controller: string;
  readonly preparedEpoch: number;
  readonly preparedGeneration: number;
  /** Hex SHA-256 of the previous event's canonical bytes (`GENESIS_HASH` for the first). */
  readonly prevHash: string;
  readonly issuedAt: number;
}

/** What each event type changes. */
export type ControlEventBody =
  | {
      readonly type: typeof ControlEventType.create_obligation;
      readonly obligationId: string;
      readonly volume: string;
      readonly lane: string;
      readonly representation: PayloadRepresentation;
      /** Holders responsible from `fromSeq` onward. */
      readonly holders: readonly string[];
      readonly fromSeq: number;
    }
  | {
      readonly type: typeof ControlEventType.admit_holder;
      readonly holderId: string;
      readonly incarnation: number;
      /** Raw 32-byte Ed25519 public key that signs this incarnation's receipts. */
      readonly publicKey: Uint8Array;
      /** Failure domain path, e.g. `aws/us-east-1/use1-az1/rack7`. */
      readonly failureDomain: string;
      /**
       * Volumes the holder is bound to (v2 body; see control-scope.ts). They add to the ones it
       * was bound to before. Absent (a v1 body): a new incarnation keeps its holder's binding, and
       * a holder admitted for the first time this way is unscoped, bound to every volume.
       */
      readonly volumes?: readonly string[];
      /**
       * The holder's own signed admission request (admission-request.ts wire bytes; a v3 body,
       * which names no volumes): proof that the holder asked for this incarnation with the key the
       * log admitted. With it, a controller of any one of a shared holder's volumes may commit the
       * re-admission (control-scope.ts `authorityScope`).
       */
      readonly request?: Uint8Array;
    }
  | {
      readonly type: typeof ControlEventType.prepare_transfer;
      readonly transferId: string;
      readonly obligationId: string;
      readonly fromHolder: string;
      readonly toHolder: string;
      readonly ranges: RangeSet;
    }
  | { readonly type: typeof ControlEventType.activate_replacement; readonly transferId: string }
  | {
      readonly type: typeof ControlEventType.release_ranges;
      readonly obligationId: string;
      readonly holderId: string;
      readonly ranges: RangeSet;
      /** Holders whose current responsibility justifies this release (never the releasing holder). */
      readonly reliesOn: readonly string[];
    }
  | {
      /** A release justified by a base snapshot (a rolling base beside `baseHolder`) that contains the ranges. */
      readonly type: typeof ControlEventType.release_to_base;
      readonly obligationId: string;
      readonly holderId: string;
      readonly ranges: RangeSet;
      readonly baseHolder: string;
      readonly snapshotId: string;
      /** The base contains the lane through this sequence; every released range lies at or below it. */
      readonly baseThroughSeq: number;
    }
  | { readonly type: typeof ControlEventType.retire_holder; readonly holderId: string; readonly incarnation: number }
  | {
      readonly type: typeof ControlEventType.policy_change;
      readonly topologyEpoch: number;
      readonly policyGeneration: number;
      readonly reason: string;
    }
  | {
      readonly type: typeof ControlEventType.declare_failure;
      readonly scope: FailureScope;
      readonly domain: string;
      readonly holderIds: readonly string[];
    }
  | {
      /** Until `end_hold`, no holder in `holders` (every holder when empty) may release `ranges` of the lane. */
      readonly type: typeof ControlEventType.hold_ranges;
      readonly holdId: string;
      readonly kind: HoldKind;
      readonly volume: string;
      readonly lane: string;
      readonly ranges: RangeSet;
      readonly holders: readonly string[];
      /**
       * When the holder of the hold expects to end it (ms since epoch; 0: no end). The controller ends an overdue
       * recovery's hold.
       */
      readonly untilMs: number;
      /** Who placed it (an operator, a recovery run), for status and audit. */
      readonly by: string;
    }
  | { readonly type: typeof ControlEventType.end_hold; readonly holdId: string; readonly reason: string }
  | {
      /** An operator admits a controller's signing key: from now on events it signs count (see control-trust.ts). */
      readonly type: typeof ControlEventType.admit_controller;
      readonly controllerId: string;
      /** Raw 32-byte Ed25519 public key. */
      readonly publicKey: Uint8Array;
      /**
       * Volumes the controller may commit for (v2 body; see control-scope.ts). Absent (a v1 body):
       * every volume, as before scoping; `custody bootstrap` re-admits such a controller with its volumes.
       */
      readonly volumes?: readonly string[];
    }
  | {
      /**
       * A failover on one lane: writer term `term` continues from `recoveredCut`; the old term's
       * history reached `oldHead` (the highest sequence any holder receipted), so `recoveredCut+1 ..
       * oldHead` is abandoned, and the new term's sequences start at `firstSeq` (> oldHead).
       */
      readonly type: typeof ControlEventType.commit_failover;
      readonly volume: string;
      readonly lane: string;
      readonly term: number;
      readonly recoveredCut: number;
      readonly oldHead: number;
      readonly firstSeq: number;
    }
  | {
      /**
       * The controller's persistence targets for one lane: only `targets` (disk-capable holders of
       * the lane) flush its segments from `fromSeq` on, for the named `scenarios` that need disk;
       * other disk-capable holders keep them in RAM. Empty `targets` withdraws the choice (every
       * disk-capable holder flushes again). The newest choice of a lane replaces the previous one.
       */
      readonly type: typeof ControlEventType.choose_persistence;
      readonly volume: string;
      readonly lane: string;
      readonly fromSeq: number;
      readonly targets: readonly string[];
      readonly scenarios: readonly string[];
    }
  | {
      /**
       * The author claims the control lease of `volume` for `term` (greater than the volume's
       * current term): from now on only it may commit events touching the volume (control-lease.ts).
       * It promises to commit something at least every `renewMs`; a standby that sees nothing from
       * it for `timeoutMs` by its own clock may claim the next term.
       */
      readonly type: typeof ControlEventType.claim_lease;
      readonly volume: string;
      readonly term: number;
      readonly renewMs: number;
      readonly timeoutMs: number;
    }
  | {
      /**
       * The lease holder of `volume` is alive at `term` (committed only when it committed nothing else for `renewMs`).
       */
      readonly type: typeof ControlEventType.renew_lease;
      readonly volume: string;
      readonly term: number;
    };

/** One control event. */
export type ControlEvent = ControlEventHeader & ControlEventBody;

/** A control event of one type. */
export type ControlEventOf<T extends ControlEventType> = Extract<ControlEvent, { type: T }>;

// ---- canonical encoding ----

const MAGIC = "custody-control-event";
const encoder = new Encoder();
const decoder = new Decoder({ maxStrLength: 64 * 1024, maxArrayLength: 64 * 1024, maxMapLength: 0, maxExtLength: 0 });

const hashBytes = z.instanceof(Uint8Array).refine((b) => b.byteLength === 32, "must be 32 bytes");
const rangesSchema = z.array(z.tuple([uintSchema, uintSchema])).max(4096);
const domainSchema = z.string().min(1).max(256);
const publicKeySchema = z.instanceof(Uint8Array).refine((b) => b.byteLength === 32, "public key must be 32 bytes");
const volumesSchema = z.array(tokenSchema).min(1).max(64);
const headerTuple = z.tuple([
  z.literal(MAGIC),
  z.literal(ControlEventVersion.v1),
  z.enum(Object.values(ControlEventType) as [ControlEventType, ...ControlEventType[]]),
  tokenSchema,
  tokenSchema,
  uintSchema,
  uintSchema,
  hashBytes,
  uintSchema,
  z.array(z.unknown()).max(16),
]);

const bodySchemas = {
  create_obligation: z.tuple([
    tokenSchema,
    tokenSchema,
    tokenSchema,
    z.enum([PayloadRepresentation.raw, PayloadRepresentation.coalesced]),
    z.array(tokenSchema).max(64),
    uintSchema,
  ]),
  admit_holder: z.tuple([tokenSchema, uintSchema, publicKeySchema, domainSchema]),
  admit_holder_v2: z.tuple([
    z.literal(AdmissionBodyVersion.v2),
    tokenSchema,
    uintSchema,
    publicKeySchema,
    domainSchema,
    volumesSchema,
  ]),
  admit_holder_v3: z.tuple([
    z.literal(AdmissionBodyVersion.v3),
    tokenSchema,
    uintSchema,
    publicKeySchema,
    domainSchema,
    z.instanceof(Uint8Array).refine((b) => b.byteLength <= 4096, "admission request at most 4096 bytes"),
  ]),
  prepare_transfer: z.tuple([tokenSchema, tokenSchema, tokenSchema, tokenSchema, rangesSchema]),
  activate_replacement: z.tuple([tokenSchema]),
  release_ranges: z.tuple([tokenSchema, tokenSchema, rangesSchema, z.array(tokenSchema).max(64)]),
  release_to_base: z.tuple([tokenSchema, tokenSchema, rangesSchema, tokenSchema, tokenSchema, uintSchema]),
  retire_holder: z.tuple([tokenSchema, uintSchema]),
  policy_change: z.tuple([uintSchema, uintSchema, z.string().max(1024)]),
  declare_failure: z.tuple([
    z.enum([FailureScope.holder, FailureScope.zone, FailureScope.region]),
    domainSchema,
    z.array(tokenSchema).max(1024),
  ]),
  hold_ranges: z.tuple([
    tokenSchema,
    z.enum([HoldKind.pitr_pin, HoldKind.recovery]),
    tokenSchema,
    tokenSchema,
    rangesSchema,
    z.array(tokenSchema).max(64),
    uintSchema,
    z.string().max(256),
  ]),
  end_hold: z.tuple([tokenSchema, z.string().max(1024)]),
  admit_controller: z.tuple([tokenSchema, publicKeySchema]),
  admit_controller_v2: z.tuple([z.literal(AdmissionBodyVersion.v2), tokenSchema, publicKeySchema, volumesSchema]),
  commit_failover: z.tuple([tokenSchema, tokenSchema, uintSchema, uintSchema, uintSchema, uintSchema]),
  choose_persistence: z.tuple([
    z.literal(PersistenceChoiceVersion.v1),
    tokenSchema,
    tokenSchema,
    uintSchema,
    z.array(tokenSchema).max(64),
    z.array(z.string().min(1).max(256)).max(64),
  ]),
  claim_lease: z.tuple([z.literal(LeaseBodyVersion.v1), tokenSchema, uintSchema, uintSchema, uintSchema]),
  renew_lease: z.tuple([z.literal(LeaseBodyVersion.v1), tokenSchema, uintSchema]),
} as const;

function bodyToTuple(e: ControlEventBody): unknown[] {
  switch (e.type) {
    case "create_obligation":
      return [e.obligationId, e.volume, e.lane, e.representation, [...e.holders], e.fromSeq];
    case "admit_holder":
      if (e.request !== undefined) {
        if (e.volumes !== undefined)
          throw new ControlFenceError(
            ControlFenceCode.malformed,
            "an admission carrying the holder's request names no volumes (v3 body)",
            { holderId: e.holderId },
          );
        return [AdmissionBodyVersion.v3, e.holderId, e.incarnation, e.publicKey, e.failureDomain, e.request];
      }
      return e.volumes === undefined
        ? [e.holderId, e.incarnation, e.publicKey, e.failureDomain]
        : [AdmissionBodyVersion.v2, e.holderId, e.incarnation, e.publicKey, e.failureDomain, [...e.volumes]];
    case "prepare_transfer":
      return [e.transferId, e.obligationId, e.fromHolder, e.toHolder, e.ranges.toJSON()];
    case "activate_replacement":
      return [e.transferId];
    case "release_ranges":
      return [e.obligationId, e.holderId, e.ranges.toJSON(), [...e.reliesOn]];
    case "release_to_base":
      return [e.obligationId, e.holderId, e.ranges.toJSON(), e.baseHolder, e.snapshotId, e.baseThroughSeq];
    case "retire_holder":
      return [e.holderId, e.incarnation];
    case "policy_change":
      return [e.topologyEpoch, e.policyGeneration, e.reason];
    case "declare_failure":
      return [e.scope, e.domain, [...e.holderIds]];
    case "hold_ranges":
      return [e.holdId, e.kind, e.volume, e.lane, e.ranges.toJSON(), [...e.holders], e.untilMs, e.by];
    case "end_hold":
      return [e.holdId, e.reason];
    case "admit_controller":
      return e.volumes === undefined
        ? [e.controllerId, e.publicKey]
        : [AdmissionBodyVersion.v2, e.controllerId, e.publicKey, [...e.volumes]];
    case "commit_failover":
      return [e.volume, e.lane, e.term, e.recoveredCut, e.oldHead, e.firstSeq];
    case "choose_persistence":
      return [PersistenceChoiceVersion.v1, e.volume, e.lane, e.fromSeq, [...e.targets], [...e.scenarios]];
    case "claim_lease":
      return [LeaseBodyVersion.v1, e.volume, e.term, e.renewMs, e.timeoutMs];
    case "renew_lease":
      return [LeaseBodyVersion.v1, e.volume, e.term];
  }
}

/** Event types about obligations and the ranges held under them (the rest admit, fence and lease). */
type CustodyBodyType =
  | "create_obligation"
  | "prepare_transfer"
  | "activate_replacement"
  | "release_ranges"
  | "release_to_base"
  | "hold_ranges"
  | "end_hold";

/** The body of an obligation or range event from its positional tuple. */
function custodyBodyFromTuple(type: CustodyBodyType, raw: unknown[]): ControlEventBody {
  switch (type) {
    case "create_obligation": {
      const [obligationId, volume, lane, representation, holders, fromSeq] = bodySchemas.create_obligation.parse(raw);
      return { type, obligationId, volume, lane, representation, holders, fromSeq };
    }
    case "prepare_transfer": {
      const [transferId, obligationId, fromHolder, toHolder, ranges] = bodySchemas.prepare_transfer.parse(raw);
      return { type, transferId, obligationId, fromHolder, toHolder, ranges: RangeSet.fromJSON(ranges) };
    }
    case "activate_replacement": {
      const [transferId] = bodySchemas.activate_replacement.parse(raw);
      return { type, transferId };
    }
    case "release_ranges": {
      const [obligationId, holderId, ranges, reliesOn] = bodySchemas.release_ranges.parse(raw);
      return { type, obligationId, holderId, ranges: RangeSet.fromJSON(ranges), reliesOn };
    }
    case "release_to_base": {
      const [obligationId, holderId, ranges, baseHolder, snapshotId, baseThroughSeq] =
        bodySchemas.release_to_base.parse(raw);
      return {
        type,
        obligationId,
        holderId,
        ranges: RangeSet.fromJSON(ranges),
        baseHolder,
        snapshotId,
        baseThroughSeq,
      };
    }
    case "hold_ranges": {
      const [holdId, kind, volume, lane, ranges, holders, untilMs, by] = bodySchemas.hold_ranges.parse(raw);
      return { type, holdId, kind, volume, lane, ranges: RangeSet.fromJSON(ranges), holders, untilMs, by };
    }
    case "end_hold": {
      const [holdId, reason] = bodySchemas.end_hold.parse(raw);
      return { type, holdId, reason };
    }
  }
}

function bodyFromTuple(type: ControlEventType, raw: unknown[]): ControlEventBody {
  switch (type) {
    case "admit_holder": {
      // A v2 body starts with its version (a number); a v1 body with the holder id (a string).
      if (raw[0] === AdmissionBodyVersion.v3) {
        const [, holderId, incarnation, publicKey, failureDomain, request] = bodySchemas.admit_holder_v3.parse(raw);
        return { type, holderId, incarnation, publicKey, failureDomain, request };
      }
      if (typeof raw[0] === "number") {
        const [, holderId, incarnation, publicKey, failureDomain, volumes] = bodySchemas.admit_holder_v2.parse(raw);
        return { type, holderId, incarnation, publicKey, failureDomain, volumes };
      }
      const [holderId, incarnation, publicKey, failureDomain] = bodySchemas.admit_holder.parse(raw);
      return { type, holderId, incarnation, publicKey, failureDomain };
    }
    case "retire_holder": {
      const [holderId, incarnation] = bodySchemas.retire_holder.parse(raw);
      return { type, holderId, incarnation };
    }
    case "policy_change": {
      const [topologyEpoch, policyGeneration, reason] = bodySchemas.policy_change.parse(raw);
      return { type, topologyEpoch, policyGeneration, reason };
    }
    case "declare_failure": {
      const [scope, domain, holderIds] = bodySchemas.declare_failure.parse(raw);
      return { type, scope, domain, holderIds };
    }
    case "admit_controller": {
      if (typeof raw[0] === "number") {
        const [, controllerId, publicKey, volumes] = bodySchemas.admit_controller_v2.parse(raw);
        return { type, controllerId, publicKey, volumes };
      }
      const [controllerId, publicKey] = bodySchemas.admit_controller.parse(raw);
      return { type, controllerId, publicKey };
    }
    case "commit_failover": {
      const [volume, lane, term, recoveredCut, oldHead, firstSeq] = bodySchemas.commit_failover.parse(raw);
      return { type, volume, lane, term, recoveredCut, oldHead, firstSeq };
    }
    case "choose_persistence": {
      const [, volume, lane, fromSeq, targets, scenarios] = bodySchemas.choose_persistence.parse(raw);
      return { type, volume, lane, fromSeq, targets, scenarios };
    }
    case "claim_lease": {
      const [, volume, term, renewMs, timeoutMs] = bodySchemas.claim_lease.parse(raw);
      return { type, volume, term, renewMs, timeoutMs };
    }
    case "renew_lease": {
      const [, volume, term] = bodySchemas.renew_lease.parse(raw);
      return { type, volume, term };
    }
    default:
      return custodyBodyFromTuple(type, raw);
  }
}

/**
 * Canonical bytes of an event: msgpack of positional arrays in a fixed order (deterministic, so
 * the hash chain is well defined). Throws ControlFenceError `malformed` for a bad prevHash.
 */
export function encodeControlEvent(e: ControlEvent): Uint8Array {
  if (!/^[0-9a-f]{64}$/.test(e.prevHash))
    throw new ControlFenceError(ControlFenceCode.malformed, "prevHash must be 64 lowercase hex digits", {
      prevHash: e.prevHash,
    });
  return encoder.encode([
    MAGIC,
    ControlEventVersion.v1,
    e.type,
    e.region,
    e.controller,
    e.preparedEpoch,
    e.preparedGeneration,
    Buffer.from(e.prevHash, "hex"),
    e.issuedAt,
    bodyToTuple(e),
  ]);
}

/** Decodes canonical event bytes. Throws ControlFenceError `malformed` for anything that is not a valid v1 event. */
/**
 * `encodeControlEvent` for an append: the bytes are decoded back first, so an event every reader
 * would refuse (a field outside its schema, e.g. a token with a `.`) is refused here as `malformed`
 * before it reaches a log. Stored, it would stop every replay of that log for good (`unreadable_entry`).
 */
export function encodeAppendableControlEvent(e: ControlEvent): Uint8Array {
  const bytes = encodeControlEvent(e);
  decodeControlEvent(bytes);
  return bytes;
}

export function decodeControlEvent(bytes: Uint8Array): ControlEvent {
  try {
    const [, , type, region, controller, preparedEpoch, preparedGeneration, prev, issuedAt, body] = headerTuple.parse(
      decodeBounded(decoder, bytes),
    );
    const header: ControlEventHeader = {
      region,
      controller,
      preparedEpoch,
      preparedGeneration,
      prevHash: Buffer.from(prev).toString("hex"),
      issuedAt,
    };
    return { ...header, ...bodyFromTuple(type, body) };
  } catch (err) {
    const issue = err instanceof z.ZodError ? err.issues[0] : undefined;
    throw new ControlFenceError(
      ControlFenceCode.malformed,
      `control event is malformed${issue ? `: ${issue.path.join(".")}: ${issue.message}` : ""}`,
      {},
      { cause: err },
    );
  }
}

/** Hex SHA-256 of canonical event bytes: the value the next event names as `prevHash`. */
export function hashControlEventBytes(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Hex SHA-256 of an event's canonical encoding. */
export function hashControlEvent(e: ControlEvent): string {
  return hashControlEventBytes(encodeControlEvent(e));
}
