import type { KeyObject } from "node:crypto";
import { CustodyError } from "../core/index.ts";
import { ED25519_SIGNATURE_BYTES, signBytes, verifyBytes } from "./signing.ts";

/**
 * A writer's attestation of units: one Ed25519 signature by the writer key of a volume over the
 * volume, lane, term and, for each unit, its first/last sequence and SHA-256 digest (the digest
 * already binds every other unit field). One signature covers up to MAX_ATTESTED_UNITS units, so
 * its cost is paid per batch of units, not per unit; a holder forwards the attestation bytes
 * unchanged with the units, so every hop checks the writer's own signature and none can forge it.
 *
 * Wire form (then base64 in the `Custody-Unit-Attestation` header): volume length (1 byte),
 * volume, lane length, lane, term (f64), count (u16), count × (firstSeq f64, lastSeq f64, digest
 * 32 bytes), signature (64 bytes). The signature covers DOMAIN ‖ everything before it.
 */

/** Most units one attestation covers (bounds its size: 48 bytes per unit). */
export const MAX_ATTESTED_UNITS = 32;

const DOMAIN = Buffer.from("custody.unit-attestation.v1\0", "utf8");
const CLAIM_BYTES = 8 + 8 + 32;
const MAX_NAME_BYTES = 255;

/** Why a unit is not authenticated as the writer's (each is counted under its code). */
export const UnitAuthCode = {
  /** The message carries no attestation although the holder knows a writer key. */
  Unsigned: "unit_unsigned",
  /** The attestation does not parse. */
  Malformed: "unit_attestation_malformed",
  /** No writer key is named for the attestation's volume and term. */
  SignerUnknown: "unit_signer_unknown",
  /** The signature does not verify under the named writer key. */
  BadSignature: "unit_bad_signature",
  /** A valid attestation that does not list this unit (another lane, volume, term, range or digest). */
  NotAttested: "unit_not_attested",
} as const;
export type UnitAuthCode = (typeof UnitAuthCode)[keyof typeof UnitAuthCode];

/** Thrown when an attestation cannot be built or read. */
export class UnitAuthError extends CustodyError {
  constructor(code: UnitAuthCode, message: string, detail: Record<string, unknown> = {}) {
    super(code, message, detail);
  }
}

/** One unit as an attestation names it. */
export interface UnitClaim {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly digest: Uint8Array;
}

/** An attestation as read (not yet verified unless it came from `UnitAuthenticator`). */
export interface UnitAttestation {
  readonly volume: string;
  readonly lane: string;
  readonly term: number;
  readonly claims: readonly UnitClaim[];
  /** The bytes the signature covers, without the domain tag. */
  readonly body: Uint8Array;
  readonly signature: Uint8Array;
}

/**
 * Signs `claims` of one lane and term with the writer key; returns the wire bytes. Throws UnitAuthError on a bad batch.
 */
export function signUnitAttestation(
  writerKey: KeyObject,
  volume: string,
  lane: string,
  term: number,
  claims: readonly UnitClaim[],
): Uint8Array {
  const v = Buffer.from(volume, "utf8");
  const l = Buffer.from(lane, "utf8");
  if (
    claims.length === 0 ||
    claims.length > MAX_ATTESTED_UNITS ||
    v.length > MAX_NAME_BYTES ||
    l.length > MAX_NAME_BYTES
  ) {
    throw new UnitAuthError(
      UnitAuthCode.Malformed,
      `an attestation covers 1..${MAX_ATTESTED_UNITS} units of named lanes`,
      { units: claims.length },
    );
  }
  const bodyBytes = 1 + v.length + 1 + l.length + 8 + 2 + claims.length * CLAIM_BYTES;
  const out = Buffer.alloc(bodyBytes + ED25519_SIGNATURE_BYTES);
  let o = out.writeUInt8(v.length, 0);
  o += v.copy(out, o);
  o = out.writeUInt8(l.length, o);
  o += l.copy(out, o);
  o = out.writeDoubleBE(term, o);
  o = out.writeUInt16BE(claims.length, o);
  for (const c of claims) {
    if (c.digest.byteLength !== 32)
      throw new UnitAuthError(UnitAuthCode.Malformed, "a unit digest has 32 bytes", { length: c.digest.byteLength });
    o = out.writeDoubleBE(c.firstSeq, o);
    o = out.writeDoubleBE(c.lastSeq, o);
    out.set(c.digest, o);
    o += 32;
  }
  const body = out.subarray(0, bodyBytes);
  out.set(signBytes(writerKey, Buffer.concat([DOMAIN, body])), bodyBytes);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** Reads wire bytes; throws UnitAuthError `unit_attestation_malformed`. Verifies nothing. */
export function readUnitAttestation(bytes: Uint8Array): UnitAttestation {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = (why: string) =>
    new UnitAuthError(UnitAuthCode.Malformed, `unit attestation: ${why}`, { length: b.length });
  let o = 0;
  const name = (): string => {
    if (o + 1 > b.length) throw bad("truncated name");
    const n = b.readUInt8(o);
    if (n === 0 || o + 1 + n > b.length) throw bad("bad name length");
    const s = b.toString("utf8", o + 1, o + 1 + n);
    o += 1 + n;
    return s;
  };
  const volume = name();
  const lane = name();
  if (o + 10 > b.length) throw bad("truncated term");
  const term = b.readDoubleBE(o);
  const count = b.readUInt16BE(o + 8);
  o += 10;
  if (!Number.isSafeInteger(term) || term < 0) throw bad("bad term");
  if (count === 0 || count > MAX_ATTESTED_UNITS) throw bad("bad unit count");
  if (b.length !== o + count * CLAIM_BYTES + ED25519_SIGNATURE_BYTES) throw bad("length does not match the unit count");
  const claims: UnitClaim[] = [];
  for (let i = 0; i < count; i++, o += CLAIM_BYTES) {
    const firstSeq = b.readDoubleBE(o);
    const lastSeq = b.readDoubleBE(o + 8);
    if (!Number.isSafeInteger(firstSeq) || !Number.isSafeInteger(lastSeq) || firstSeq < 0 || lastSeq < firstSeq)
      throw bad("bad sequence range");
    claims.push({ firstSeq, lastSeq, digest: bytes.subarray(o + 16, o + 16 + 32) });
  }
  return { volume, lane, term, claims, body: bytes.subarray(0, o), signature: bytes.subarray(o) };
}

/** True when `signature` is the key's signature of the attestation. Never throws. */
export function verifyUnitAttestation(writerKey: KeyObject, a: UnitAttestation): boolean {
  return verifyBytes(writerKey, Buffer.concat([DOMAIN, a.body]), a.signature);
}

/** True when `a` lists exactly this unit (identity, range and digest). */
export function attests(
  a: UnitAttestation,
  unit: { volume: string; lane: string; term: number; firstSeq: number; lastSeq: number; digest: Uint8Array },
): boolean {
  if (a.volume !== unit.volume || a.lane !== unit.lane || a.term !== unit.term) return false;
  for (const c of a.claims) {
    if (c.firstSeq !== unit.firstSeq || c.lastSeq !== unit.lastSeq) continue;
    if (Buffer.compare(c.digest, unit.digest) === 0) return true;
  }
  return false;
}
