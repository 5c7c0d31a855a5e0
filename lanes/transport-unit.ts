import { createHash, timingSafeEqual } from "node:crypto";
import { CustodyError } from "../core/custody-error.ts";

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

const BAD_TOKEN = /[.*>\s]/;

/**
 * Throws InvalidUnitError unless `value` is a usable subject token (non-empty, at most 128 chars,
 * no `.`, `*`, `>` or whitespace) — volume and lane names end up in NATS subjects.
 */
export function checkIdentifier(field: string, value: unknown): asserts value is string {
  if (typeof value !== "string" || value.length === 0 || value.length > 128 || BAD_TOKEN.test(value)) {
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

/**
 * SHA-256 over a canonical, length-prefixed encoding of the header fields and the payload, so no
 * two different units share an encoding. Throws InvalidUnitError on malformed fields.
 */
export function unitDigest(u: UnitFields): Uint8Array {
  checkFields(u);
  const h = createHash("sha256");
  h.update(DOMAIN);
  for (const s of [u.volume, u.lane]) {
    const b = Buffer.from(s, "utf8");
    const len = Buffer.alloc(2);
    len.writeUInt16BE(b.length);
    h.update(len).update(b);
  }
  const nums = Buffer.alloc(8 * (3 + u.commitTs.length) + 4);
  let o = 0;
  for (const n of [u.term, u.firstSeq, u.lastSeq, ...u.commitTs]) o = nums.writeDoubleBE(n, o);
  nums.writeUInt32BE(u.payload.length, o);
  h.update(nums).update(u.payload);
  return new Uint8Array(h.digest());
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
  const want = unitDigest(u);
  if (!timingSafeEqual(want, u.digest)) {
    throw new UnitDigestError({ volume: u.volume, lane: u.lane, firstSeq: u.firstSeq, lastSeq: u.lastSeq });
  }
  return u;
}

/** Key naming one lane of one volume: `volume.lane` (unambiguous: identifiers never contain "."). */
export function laneKey(volume: string, lane: string): string {
  return `${volume}.${lane}`;
}
