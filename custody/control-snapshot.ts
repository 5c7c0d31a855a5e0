import { createHash } from "node:crypto";
import { Decoder, Encoder, ExtensionCodec } from "@msgpack/msgpack";
import { z } from "zod";
import { RangeSet } from "../lanes/index.ts";
import { decodeBounded } from "../transport/protocol/index.ts";
import { ControlFenceCode, ControlLogRegressionCode, ControlLogRegressionError } from "./control-error.ts";
import {
  isSnapshotRecord,
  type ControlSnapshot,
  type ControlSnapshotRecord,
  type ControlState,
  type EntrySignature,
} from "./control-records.ts";
import { entrySignatureVerifies, type ControlTrust } from "./control-trust.ts";
export { isSnapshotRecord, type ControlSnapshot, type ControlSnapshotRecord } from "./control-records.ts";

/**
 * Snapshots of the control log: the folded ControlState at sequence S, committed into the log
 * itself at position S + 1 by an operator, so the entries below it can be purged and the log stays
 * bounded (docs/custody.md, "Snapshots and compaction"). The chain anchors at the snapshot: the
 * first event after it names the snapshot's head hash (the head at S) as its `prevHash`, exactly as
 * it would have named the event at S. Only an operator may sign one: a snapshot asserts a whole
 * state that no fold checked, and the operator key is the one trust root every reader already
 * holds without the log (a controller's key is only known from entries the purge removes).
 */

/** Snapshot format versions this code reads and writes. */
export const ControlSnapshotVersion = { v1: 1 } as const;

const MAGIC = "custody-control-snapshot";
/** RangeSet, the one class a ControlState holds, travels as this msgpack extension type. */
const RANGE_SET_EXT = 1;
/** A snapshot message may not exceed the NATS default max_payload. */
export const CONTROL_SNAPSHOT_MAX_BYTES = 1024 * 1024;

const pairs = z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]));
const rangeDecoder = new Decoder({
  maxArrayLength: CONTROL_SNAPSHOT_MAX_BYTES,
  maxMapLength: 0,
  maxExtLength: 0,
  maxStrLength: 0,
  maxBinLength: 0,
});
const rangeEncoder = new Encoder();
const extensionCodec = new ExtensionCodec();
extensionCodec.register({
  type: RANGE_SET_EXT,
  // Its own encoder: the state encoder is in the middle of an encode when it calls this.
  encode: (x: unknown) => (x instanceof RangeSet ? rangeEncoder.encode(x.toJSON()) : null),
  decode: (data: Uint8Array) => RangeSet.fromJSON(pairs.parse(decodeBounded(rangeDecoder, data))),
});
// Sorted keys and no undefined fields: equal states have equal bytes, whatever order the fold built them in.
const stateEncoder: Encoder = new Encoder({ extensionCodec, sortKeys: true, ignoreUndefined: true });
const LIMIT = CONTROL_SNAPSHOT_MAX_BYTES;
const stateDecoder = new Decoder({
  extensionCodec,
  maxStrLength: LIMIT,
  maxBinLength: LIMIT,
  maxArrayLength: LIMIT,
  maxMapLength: LIMIT,
  maxExtLength: LIMIT,
});
const headerEncoder = new Encoder();
const headerDecoder = new Decoder({
  maxStrLength: 256,
  maxBinLength: LIMIT,
  maxArrayLength: 16,
  maxMapLength: 0,
  maxExtLength: 0,
});

const rangeSet = z.custom<RangeSet>((x) => x instanceof RangeSet);
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const uint = z.number().int().nonnegative();
/**
 * The shape a decoded state must have (its content is the signer's; the shape is checked so a reader cannot crash on
 * it).
 */
const stateShape = z
  .object({
    lastSeq: uint,
    headHash: hex64,
    topologyEpoch: uint,
    policyGeneration: uint,
    holders: z.record(
      z.string(),
      z
        .object({ holderId: z.string(), incarnation: uint, publicKey: z.instanceof(Uint8Array), status: z.string() })
        .passthrough(),
    ),
    obligations: z.record(
      z.string(),
      z
        .object({
          obligationId: z.string(),
          responsible: z.record(z.string(), rangeSet),
          released: z.record(z.string(), rangeSet),
        })
        .passthrough(),
    ),
    transfers: z.record(z.string(), z.object({ ranges: rangeSet }).passthrough()),
    holds: z.record(z.string(), z.object({ ranges: rangeSet }).passthrough()),
    rejected: z.array(z.object({ seq: uint, code: z.string(), message: z.string() })),
    lastEntryHash: hex64.optional(),
  })
  .passthrough();

const headerTuple = z.tuple([
  z.literal(MAGIC),
  z.literal(ControlSnapshotVersion.v1),
  z.string().min(1).max(128),
  uint,
  z.instanceof(Uint8Array),
  z.instanceof(Uint8Array),
  z.instanceof(Uint8Array),
]);

/** Canonical bytes of a folded state (msgpack, sorted keys, RangeSets as extension 1). */
export function encodeControlState(s: ControlState): Uint8Array {
  return stateEncoder.encode(s);
}

/**
 * Inverse of `encodeControlState`; throws ControlLogRegressionError `snapshot_mismatch` for bytes that are not a state.
 */
export function decodeControlState(bytes: Uint8Array): ControlState {
  try {
    return stateShape.parse(decodeBounded(stateDecoder, bytes)) as unknown as ControlState;
  } catch (err) {
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.snapshot_mismatch,
      `snapshot state does not decode: ${(err as Error).message.slice(0, 200)}`,
    );
  }
}

/** Hex SHA-256 of canonical bytes. */
function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Hex SHA-256 of a state's canonical bytes: two readers that folded the same log agree on it. */
export function hashControlState(s: ControlState): string {
  return sha256(encodeControlState(s));
}

/** Canonical bytes of the snapshot of `s` (folded from region `region`'s log), to be committed at `s.lastSeq + 1`. */
export function encodeControlSnapshot(region: string, s: ControlState): Uint8Array {
  const state = encodeControlState(s);
  return headerEncoder.encode([
    MAGIC,
    ControlSnapshotVersion.v1,
    region,
    s.lastSeq,
    Buffer.from(s.headHash, "hex"),
    Buffer.from(sha256(state), "hex"),
    state,
  ]);
}

/**
 * Decodes canonical snapshot bytes (throws on anything else; the state itself is decoded only when a reader starts from
 * it).
 */
export function decodeControlSnapshot(bytes: Uint8Array): ControlSnapshot {
  const [, version, region, throughSeq, head, stateHash, state] = headerTuple.parse(
    decodeBounded(headerDecoder, bytes),
  );
  if (head.byteLength !== 32 || stateHash.byteLength !== 32) throw new Error("snapshot hashes must be 32 bytes");
  return {
    version,
    region,
    throughSeq,
    headHash: Buffer.from(head).toString("hex"),
    stateHash: Buffer.from(stateHash).toString("hex"),
    state,
  };
}

/** The record of canonical snapshot bytes stored at `seq`; throws when they do not decode. */
export function snapshotRecordFromBytes(
  seq: number,
  bytes: Uint8Array,
  signature?: EntrySignature,
): ControlSnapshotRecord {
  const r = { seq, hash: sha256(bytes), snapshot: decodeControlSnapshot(bytes) };
  return signature === undefined ? r : { ...r, signature };
}

/**
 * Why a signed log's reader may not take `r` as an operator's snapshot, or undefined when an operator signed it at its
 * position. Pure.
 */
export function snapshotSignatureProblem(
  r: ControlSnapshotRecord,
  trust: ControlTrust,
): { code: ControlFenceCode; message: string } | undefined {
  const sig = r.signature;
  if (sig === undefined)
    return { code: ControlFenceCode.unsigned_event, message: `snapshot ${r.seq} carries no signature` };
  const key = trust.operators[sig.signer];
  if (key === undefined)
    return {
      code: ControlFenceCode.signer_not_allowed,
      message: `snapshot ${r.seq} is signed by ${sig.signer}, not an operator (only an operator may commit a snapshot)`,
    };
  if (!entrySignatureVerifies(key, r.hash, r.seq, sig.signature))
    return {
      code: ControlFenceCode.bad_signature,
      message:
        `snapshot ${r.seq}: signature of ${sig.signer} does not verify here (forged, or replayed from ` +
        `another position)`,
    };
  return undefined;
}

/**
 * True when the state encoded in `snapshotState` is the one this reader folded, refusal messages
 * aside: they are prose a newer release may word differently, while the refused position and code
 * are what every reader must agree on.
 */
function sameFold(s: ControlState, snapshotState: Uint8Array): boolean {
  if (hashControlState(s) === sha256(snapshotState)) return true;
  let theirs: ControlState;
  try {
    theirs = decodeControlState(snapshotState);
  } catch {
    return false;
  }
  const comparable = (x: ControlState): ControlState => ({
    ...x,
    rejected: x.rejected.map((r) => ({ seq: r.seq, code: r.code, message: "" })),
  });
  return hashControlState(comparable(s)) === hashControlState(comparable(theirs));
}

function refuse(code: ControlLogRegressionCode, message: string, detail: Record<string, unknown>): never {
  throw new ControlLogRegressionError(code, message, detail);
}

/**
 * Folds a snapshot record at `r.seq` (> `s.lastSeq`) onto `s`. Pure; throws ControlLogRegressionError.
 * - A reader that folded every entry up to the snapshot (`s.lastSeq === throughSeq`) checks it
 *   against its own fold: the operator's snapshot must hold the state it folded itself (refusal
 *   messages aside) and name its head (else `snapshot_mismatch`); one no operator signed is skipped and counted in
 *   `rejected` (junk from a principal with append rights stops nobody; nothing is purged below it).
 * - A reader behind it (the entries before it were purged, or it starts here) adopts the snapshot's
 *   state, only when an operator signed it (`snapshot_forged`), its content hashes to what it
 *   claims and names its own position and head (`snapshot_mismatch`), and it does not go behind the
 *   epoch or generation the reader already has (`snapshot_regressed`).
 * - A snapshot covering less than the reader folded, signed by an operator, is `snapshot_regressed`.
 * Either way the snapshot becomes the reader's position (`lastSeq`, `lastEntryHash`) while the chain
 * head stays the head at `throughSeq`.
 */
export function foldSnapshotRecord(s: ControlState, r: ControlSnapshotRecord, trust?: ControlTrust): ControlState {
  const snap = r.snapshot;
  const forged = trust === undefined ? undefined : snapshotSignatureProblem(r, trust);
  const detail = { seq: r.seq, throughSeq: snap.throughSeq, lastSeq: s.lastSeq };
  const skip = (f: { code: ControlFenceCode; message: string }): ControlState => ({
    ...s,
    lastSeq: r.seq,
    lastEntryHash: r.hash,
    rejected: [...s.rejected, { seq: r.seq, ...f }],
  });
  if (s.lastSeq >= snap.throughSeq && s.lastSeq > 0) {
    if (forged !== undefined) return skip(forged);
    if (s.lastSeq > snap.throughSeq)
      refuse(
        ControlLogRegressionCode.snapshot_regressed,
        `snapshot at ${r.seq} covers through ${snap.throughSeq}, behind ${s.lastSeq} already folded`,
        detail,
      );
    if (snap.throughSeq !== r.seq - 1)
      refuse(
        ControlLogRegressionCode.snapshot_mismatch,
        `snapshot at ${r.seq} claims to cover through ${snap.throughSeq}`,
        detail,
      );
    if (sha256(snap.state) !== snap.stateHash || snap.headHash !== s.headHash || !sameFold(s, snap.state)) {
      refuse(
        ControlLogRegressionCode.snapshot_mismatch,
        `snapshot at ${r.seq} does not match the state folded from the log through ${s.lastSeq}`,
        { ...detail, headHash: s.headHash, snapshotHead: snap.headHash },
      );
    }
    return { ...s, lastSeq: r.seq, lastEntryHash: r.hash };
  }
  if (forged !== undefined)
    refuse(
      ControlLogRegressionCode.snapshot_forged,
      `control log starts at snapshot ${r.seq}, which no trusted operator signed: ${forged.message}`,
      { ...detail, why: forged.code },
    );
  if (snap.throughSeq !== r.seq - 1)
    refuse(
      ControlLogRegressionCode.snapshot_mismatch,
      `snapshot at ${r.seq} claims to cover through ${snap.throughSeq}`,
      detail,
    );
  if (sha256(snap.state) !== snap.stateHash)
    refuse(
      ControlLogRegressionCode.snapshot_mismatch,
      `snapshot at ${r.seq}: state does not hash to ${snap.stateHash.slice(0, 12)}…`,
      detail,
    );
  const state = decodeControlState(snap.state);
  if (state.lastSeq !== snap.throughSeq || state.headHash !== snap.headHash)
    refuse(
      ControlLogRegressionCode.snapshot_mismatch,
      `snapshot at ${r.seq}: its state is at ${state.lastSeq}, not ${snap.throughSeq}, or names another head`,
      detail,
    );
  if (state.topologyEpoch < s.topologyEpoch || state.policyGeneration < s.policyGeneration) {
    refuse(
      ControlLogRegressionCode.snapshot_regressed,
      `snapshot at ${r.seq} is at epoch ${state.topologyEpoch}/generation ${state.policyGeneration}, behind ` +
        `${s.topologyEpoch}/${s.policyGeneration}`,
      detail,
    );
  }
  return { ...state, lastSeq: r.seq, lastEntryHash: r.hash };
}
