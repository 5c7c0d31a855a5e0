import { crc32 } from "node:zlib";
import { checkIdentifier, validateTransportUnit, type TransportUnit } from "../lanes/index.ts";
import { SegmentFormatError } from "./errors.ts";
import { Segment, unitRecordBytes } from "./segment.ts";

/**
 * The self-describing byte form of one sealed segment, used for custody transfer (export/import)
 * and as the body of a spill record. Little-endian:
 *
 *   "CSEG" | version u8 | flags u8 | volume len u16 | lane len u16 | 0 u16 | units u32 | data len u32
 *   | volume | lane | per unit: payload len u32, first f64, last f64, term f64 | data
 *   | (version 2 only) attestations | crc32 u32
 *
 * `data` is the segment's stored records (digest, commit timestamps, payload per unit). The crc32
 * covers every byte before it; every unit's own SHA-256 digest is checked again on import.
 * Version 2 adds the writer attestations the units arrived with (custody/unit-attestation.ts), so
 * a holder that reads a spill record back can pass the writer's signature on: tokens count u16,
 * per token (length u16, bytes), then per unit the index of its token u16 (NO_TOKEN: none).
 * Version 1 forms (written before) still decode, every unit without an attestation.
 */
export const SEGMENT_MAGIC = 0x47455343; // "CSEG" read as little-endian u32
/** The version written when no unit has an attestation (byte for byte the original form). */
export const SEGMENT_FORMAT_VERSION = 1;
/** The version written when some unit carries a writer attestation. */
export const SEGMENT_ATTESTED_VERSION = 2;
const FIXED = 20;
const PER_UNIT = 28;
const NO_TOKEN = 0xffff;
const MAX_TOKEN_BYTES = 0xffff;

/** A decoded segment form: identity plus the units it carries. */
export interface DecodedSegment {
  readonly volume: string;
  readonly lane: string;
  readonly units: TransportUnit[];
  /** The stored records, exactly as they were in the source segment. */
  readonly data: Uint8Array;
  /** Per unit (same order), the base64 writer attestation token stored with it, if any. */
  readonly attestations: readonly (string | undefined)[];
}

/**
 * Encodes `seg` whose stored records are `data` (its RAM buffer, or bytes read back from disk).
 * The attestation tokens stored with its units go too (version 2); when no unit has one the form
 * is version 1.
 */
export function encodeSegment(seg: Segment, data: Uint8Array): Uint8Array {
  const vol = Buffer.from(seg.volume, "utf8");
  const lane = Buffer.from(seg.lane, "utf8");
  const n = seg.unitCount;
  const table = seg.attestations === undefined ? undefined : attestationTable(seg);
  const total = FIXED + vol.length + lane.length + n * PER_UNIT + seg.fill + (table?.length ?? 0) + 4;
  const out = Buffer.allocUnsafe(total);
  out.writeUInt32LE(SEGMENT_MAGIC, 0);
  out.writeUInt8(table === undefined ? SEGMENT_FORMAT_VERSION : SEGMENT_ATTESTED_VERSION, 4);
  out.writeUInt8(0, 5);
  out.writeUInt16LE(vol.length, 6);
  out.writeUInt16LE(lane.length, 8);
  out.writeUInt16LE(0, 10);
  out.writeUInt32LE(n, 12);
  out.writeUInt32LE(seg.fill, 16);
  let o = FIXED;
  o += vol.copy(out, o);
  o += lane.copy(out, o);
  for (let i = 0; i < n; i++) {
    const m = seg.unitMeta(i);
    o = out.writeUInt32LE(m.payloadLength, o);
    o = out.writeDoubleLE(m.firstSeq, o);
    o = out.writeDoubleLE(m.lastSeq, o);
    o = out.writeDoubleLE(m.term, o);
  }
  out.set(data.subarray(0, seg.fill), o);
  o += seg.fill;
  if (table !== undefined) o += table.copy(out, o);
  out.writeUInt32LE(crc32(out.subarray(0, o)), o);
  return out;
}

/** The version 2 attestation section for `seg`'s units, or undefined when none has a token. */
function attestationTable(seg: Segment): Buffer | undefined {
  const index = new Map<string, number>();
  const tokens: Buffer[] = [];
  const perUnit: number[] = [];
  for (let i = 0; i < seg.unitCount; i++) {
    const token = seg.attestationAt(i);
    let at = token === undefined ? undefined : index.get(token);
    if (token !== undefined && at === undefined) {
      const raw = Buffer.from(token, "base64");
      // A token too long to store (none a writer makes) is left out: the unit reads back unattested.
      if (raw.length > 0 && raw.length <= MAX_TOKEN_BYTES && tokens.length < NO_TOKEN) {
        at = tokens.length;
        index.set(token, at);
        tokens.push(raw);
      }
    }
    perUnit.push(at ?? NO_TOKEN);
  }
  if (tokens.length === 0) return undefined;
  const out = Buffer.allocUnsafe(2 + tokens.reduce((a, t) => a + 2 + t.length, 0) + 2 * perUnit.length);
  let o = out.writeUInt16LE(tokens.length, 0);
  for (const t of tokens) {
    o = out.writeUInt16LE(t.length, o);
    o += t.copy(out, o);
  }
  for (const at of perUnit) o = out.writeUInt16LE(at, o);
  return out;
}

/** Reads the version 2 attestation section `b[from, end)` for `n` units; throws SegmentFormatError. */
function readAttestationTable(b: Buffer, from: number, end: number, n: number): (string | undefined)[] {
  const bad = (why: string) => new SegmentFormatError(`segment attestations: ${why}`, { from, end });
  if (from + 2 > end) throw bad("truncated token count");
  const count = b.readUInt16LE(from);
  let o = from + 2;
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    if (o + 2 > end) throw bad("truncated token length");
    const len = b.readUInt16LE(o);
    if (len === 0 || o + 2 + len > end) throw bad("bad token length");
    tokens.push(b.toString("base64", o + 2, o + 2 + len));
    o += 2 + len;
  }
  if (o + 2 * n !== end) throw bad("unit indexes do not fill the section");
  const out: (string | undefined)[] = [];
  for (let i = 0; i < n; i++, o += 2) {
    const at = b.readUInt16LE(o);
    if (at !== NO_TOKEN && at >= count) throw bad("token index out of range");
    out.push(at === NO_TOKEN ? undefined : tokens[at]);
  }
  return out;
}

/**
 * Decodes and fully validates a segment form: magic, version, lengths, crc32, identifiers, record
 * layout, and every unit's digest. Throws SegmentFormatError, or the unit's own
 * InvalidUnitError/UnitDigestError. Payloads in the result are views into `bytes`.
 */
export function decodeSegment(bytes: Uint8Array): DecodedSegment {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length < FIXED + 4) throw new SegmentFormatError("segment form too short", { length: b.length });
  if (b.readUInt32LE(0) !== SEGMENT_MAGIC) throw new SegmentFormatError("bad segment magic");
  const version = b.readUInt8(4);
  if (version !== SEGMENT_FORMAT_VERSION && version !== SEGMENT_ATTESTED_VERSION)
    throw new SegmentFormatError("unsupported segment version", { version });
  const volLen = b.readUInt16LE(6);
  const laneLen = b.readUInt16LE(8);
  const n = b.readUInt32LE(12);
  const dataLen = b.readUInt32LE(16);
  const dataEnd = FIXED + volLen + laneLen + n * PER_UNIT + dataLen;
  const total = version === SEGMENT_FORMAT_VERSION ? dataEnd + 4 : b.length;
  if (total !== b.length || total < dataEnd + 4)
    throw new SegmentFormatError("segment form length mismatch", { expected: dataEnd + 4, got: b.length });
  if (b.readUInt32LE(total - 4) !== crc32(b.subarray(0, total - 4))) {
    throw new SegmentFormatError("segment checksum mismatch");
  }
  let o = FIXED;
  const volume = b.toString("utf8", o, o + volLen);
  o += volLen;
  const lane = b.toString("utf8", o, o + laneLen);
  o += laneLen;
  checkIdentifier("volume", volume);
  checkIdentifier("lane", lane);
  const metaStart = o;
  const data = b.subarray(metaStart + n * PER_UNIT, metaStart + n * PER_UNIT + dataLen);
  const units: TransportUnit[] = [];
  let at = 0;
  for (let i = 0; i < n; i++) {
    const payloadLength = b.readUInt32LE(o);
    const firstSeq = b.readDoubleLE(o + 4);
    const lastSeq = b.readDoubleLE(o + 12);
    const term = b.readDoubleLE(o + 20);
    o += PER_UNIT;
    const records = lastSeq - firstSeq + 1;
    if (!Number.isSafeInteger(records) || records < 1)
      throw new SegmentFormatError("bad unit range", { i, firstSeq, lastSeq });
    const size = unitRecordBytes({ firstSeq, lastSeq, payload: { length: payloadLength } as Uint8Array });
    if (at + size > dataLen) throw new SegmentFormatError("unit overruns segment data", { i });
    const digest = data.subarray(at, at + 32);
    const commitTs: number[] = [];
    let p = at + 32;
    for (let r = 0; r < records; r++, p += 8) commitTs.push(data.readDoubleLE(p));
    const unit: TransportUnit = {
      volume,
      lane,
      term,
      firstSeq,
      lastSeq,
      commitTs,
      payload: data.subarray(p, p + payloadLength),
      digest,
    };
    units.push(validateTransportUnit(unit));
    at += size;
  }
  if (at !== dataLen) throw new SegmentFormatError("segment data has trailing bytes", { used: at, dataLen });
  const attestations =
    version === SEGMENT_FORMAT_VERSION
      ? new Array<undefined>(n).fill(undefined)
      : readAttestationTable(b, dataEnd, total - 4, n);
  return { volume, lane, units, data, attestations };
}
