import * as crypto from "node:crypto";
import { CustodyError } from "../core/index.ts";
import { isIdentifier } from "../core/index.ts";

/**
 * A transport unit: one complete, checksummed run of records of one lane of one log (volume).
 * The payload is opaque (normally ciphertext); holders never need to read it. Field names match
 * the wire codec's `unit` message exactly.
 */
export interface TransportUnit {
  volume: string;
  lane: string;
  /** Writer term (fencing generation of the writer that produced these records). */
  term: number;
  firstSeq: number;
  lastSeq: number;
  /** Source commit timestamps, ms since epoch, one per record (`lastSeq - firstSeq + 1` entries). */
  commitTs: number[];
  payload: Uint8Array;
  /** SHA-256 over the canonical encoding of every other field (see `unitDigest`). */
  digest: Uint8Array;
}

/** A transport unit before its digest is computed. */
export type UnitFields = Omit<TransportUnit, "digest">;

/** Length of `TransportUnit.digest` in bytes. */
export const UNIT_DIGEST_BYTES = 32;

/** Thrown when a unit is structurally malformed (bad identifier, range, timestamps, digest size). */
export class InvalidUnitError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_unit", message, detail);
  }
}

/** Thrown when a unit's digest does not match its contents (corruption or forgery). */
export class UnitDigestError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("digest_mismatch", "transport unit digest does not match its contents", detail);
  }
}

/**
 * Throws InvalidUnitError unless `value` is a usable subject token (the identifier rule of
 * core/identifier.ts) — volume and lane names end up in NATS subjects.
 */
export function checkIdentifier(field: string, value: unknown): asserts value is string {
  if (!isIdentifier(value)) {
    throw new InvalidUnitError(`invalid ${field} identifier`, { field, value });
  }
}

function checkSeq(field: string, value: unknown): asserts value is number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidUnitError(`invalid ${field}`, { field, value });
  }
}

/** Structural checks shared by `unitDigest` and `validateTransportUnit`. Throws InvalidUnitError. */
function checkFields(u: UnitFields): void {
  if (typeof u !== "object" || u === null) throw new InvalidUnitError("unit is not an object", {});
  checkIdentifier("volume", u.volume);
  checkIdentifier("lane", u.lane);
  checkSeq("term", u.term);
  checkSeq("firstSeq", u.firstSeq);
  checkSeq("lastSeq", u.lastSeq);
  if (u.lastSeq < u.firstSeq) {
    throw new InvalidUnitError("lastSeq precedes firstSeq", { firstSeq: u.firstSeq, lastSeq: u.lastSeq });
  }
  const records = u.lastSeq - u.firstSeq + 1;
  if (!Array.isArray(u.commitTs) || u.commitTs.length !== records) {
    throw new InvalidUnitError("commitTs must hold one timestamp per record", {
      records,
      commitTs: Array.isArray(u.commitTs) ? u.commitTs.length : typeof u.commitTs,
    });
  }
  for (const ts of u.commitTs) {
    if (typeof ts !== "number" || !Number.isFinite(ts) || ts < 0) {
      throw new InvalidUnitError("commitTs entries must be finite, non-negative ms", { value: ts });
    }
  }
  if (!(u.payload instanceof Uint8Array)) throw new InvalidUnitError("payload must be bytes", {});
}

const DOMAIN = Buffer.from("custody.unit.v1\0", "latin1");
/** Payloads up to this size are hashed in one native call from a scratch copy; larger ones stream. */
const ONE_SHOT_MAX = 64 * 1024;
// Header scratch: domain, two length-prefixed identifiers (<= 128 chars, <= 4 bytes each in UTF-8),
// three numbers and the payload length; grown for many commit timestamps and for one-shot payloads.
let scratch = Buffer.allocUnsafe(16 * 1024 + ONE_SHOT_MAX);
type OneShotHash = {
  (alg: string, data: Uint8Array, enc: "buffer"): Buffer;
  (alg: string, data: Uint8Array, enc: "binary"): string;
};
/** `crypto.hash` (Node >= 20.12); older runtimes stream through createHash. */
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;

/** Writes the canonical header of `u` at the start of `scratch`; returns its length. */
function writeCanonicalHeader(u: UnitFields, room: number): number {
  const need = DOMAIN.length + 2 * (2 + 4 * 128) + 8 * (3 + u.commitTs.length) + 4 + room;
  if (scratch.length < need) scratch = Buffer.allocUnsafe(need);
  let o = DOMAIN.copy(scratch, 0);
  o = writeLengthPrefixed(u.volume, o);
  o = writeLengthPrefixed(u.lane, o);
  o = scratch.writeDoubleBE(u.term, o);
  o = scratch.writeDoubleBE(u.firstSeq, o);
  o = scratch.writeDoubleBE(u.lastSeq, o);
  for (const ts of u.commitTs) o = scratch.writeDoubleBE(ts, o);
  return scratch.writeUInt32BE(u.payload.length, o);
}

// Units of a lane are usually the same size: reuse the view of the scratch buffer for that length.
let lastView: Buffer | undefined;
function canonicalView(length: number): Buffer {
  if (lastView === undefined || lastView.length !== length || lastView.buffer !== scratch.buffer)
    lastView = scratch.subarray(0, length);
  return lastView;
}

/** Writes `text` as a u16 byte length and its UTF-8 bytes at `o`; returns the next offset. */
function writeLengthPrefixed(text: string, o: number): number {
  const n = scratch.write(text, o + 2, "utf8");
  scratch.writeUInt16BE(n, o);
  return o + 2 + n;
}

/**
 * The digest of fields already checked by `checkFields`, as bytes or as a binary (latin1) string (one
 * char per byte: what the per-unit check compares, so it allocates no buffer per unit).
 */
function digestOfChecked(u: UnitFields, as: "buffer"): Uint8Array;
function digestOfChecked(u: UnitFields, as: "binary"): string;
function digestOfChecked(u: UnitFields, as: "buffer" | "binary"): Uint8Array | string {
  const small = u.payload.length <= ONE_SHOT_MAX && oneShot !== undefined;
  const headerLength = writeCanonicalHeader(u, small ? u.payload.length : 0);
  if (small) {
    // One native call over header + payload: the per-unit cost is the hash itself, not its setup.
    scratch.set(u.payload, headerLength);
    const canonical = canonicalView(headerLength + u.payload.length);
    return as === "buffer" ? oneShot("sha256", canonical, "buffer") : oneShot("sha256", canonical, "binary");
  }
  const h = crypto.createHash("sha256").update(scratch.subarray(0, headerLength)).update(u.payload);
  return as === "buffer" ? new Uint8Array(h.digest()) : h.digest("binary");
}

/**
 * SHA-256 over a canonical, length-prefixed encoding of the header fields and the payload, so no
 * two different units share an encoding. Throws InvalidUnitError on malformed fields.
 */
export function unitDigest(u: UnitFields): Uint8Array {
  checkFields(u);
  return digestOfChecked(u, "buffer");
}

/** Builds a unit with its digest. Throws InvalidUnitError on malformed fields. */
export function makeTransportUnit(fields: UnitFields): TransportUnit {
  return { ...fields, digest: unitDigest(fields) };
}

/**
 * Checks structure and digest; returns the unit unchanged when both hold. Throws InvalidUnitError
 * (code `invalid_unit`) or UnitDigestError (code `digest_mismatch`). Pure: no state anywhere changes.
 */
export function validateTransportUnit(u: TransportUnit): TransportUnit {
  checkFields(u);
  if (!(u.digest instanceof Uint8Array) || u.digest.length !== UNIT_DIGEST_BYTES) {
    throw new InvalidUnitError("digest must be 32 bytes", { length: (u.digest as Uint8Array | undefined)?.length });
  }
  if (!sameDigest(digestOfChecked(u, "binary"), u.digest)) {
    throw new UnitDigestError({ volume: u.volume, lane: u.lane, firstSeq: u.firstSeq, lastSeq: u.lastSeq });
  }
  return u;
}

/**
 * True when binary (latin1) string `want` spells exactly the bytes of `got`. Not constant-time on
 * purpose: both travel in the clear.
 */
function sameDigest(want: string, got: Uint8Array): boolean {
  if (want.length !== got.length) return false;
  let diff = 0;
  for (let i = 0; i < got.length; i++) diff |= want.charCodeAt(i) ^ got[i]!;
  return diff === 0;
}

/** Key naming one lane of one volume: `volume.lane` (its home, beside the holder's own key: core/lane-key.ts). */
export { laneKey } from "../core/index.ts";
