import { crc32 } from "node:zlib";
import { checkIdentifier, validateTransportUnit, type TransportUnit } from "../lanes/index.ts";
import { SegmentFormatError } from "./errors.ts";
import { Segment, unitRecordBytes } from "./segment.ts";

/**
 * The self-describing byte form of one sealed segment, used for custody transfer (export/import)
 * and as the body of a spill record. Little-endian:
 *
 *   "CSEG" | version u8 | flags u8 | volume len u16 | lane len u16 | 0 u16 | units u32 | data len u32
 *   | volume | lane | per unit: payload len u32, first f64, last f64, term f64 | data | crc32 u32
 *
 * `data` is the segment's stored records (digest, commit timestamps, payload per unit). The crc32
 * covers every byte before it; every unit's own SHA-256 digest is checked again on import.
 */
export const SEGMENT_MAGIC = 0x47455343; // "CSEG" read as little-endian u32
export const SEGMENT_FORMAT_VERSION = 1;
const FIXED = 20;
const PER_UNIT = 28;

/** A decoded segment form: identity plus the units it carries. */
export interface DecodedSegment {
  readonly volume: string;
  readonly lane: string;
  readonly units: TransportUnit[];
  /** The stored records, exactly as they were in the source segment. */
  readonly data: Uint8Array;
}

/** Encodes `seg` whose stored records are `data` (its RAM buffer, or bytes read back from disk). */
export function encodeSegment(seg: Segment, data: Uint8Array): Uint8Array {
  const vol = Buffer.from(seg.volume, "utf8");
  const lane = Buffer.from(seg.lane, "utf8");
  const n = seg.unitCount;
  const total = FIXED + vol.length + lane.length + n * PER_UNIT + seg.fill + 4;
  const out = Buffer.allocUnsafe(total);
  out.writeUInt32LE(SEGMENT_MAGIC, 0);
  out.writeUInt8(SEGMENT_FORMAT_VERSION, 4);
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
  out.writeUInt32LE(crc32(out.subarray(0, o)), o);
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
  if (version !== SEGMENT_FORMAT_VERSION) throw new SegmentFormatError("unsupported segment version", { version });
  const volLen = b.readUInt16LE(6);
  const laneLen = b.readUInt16LE(8);
  const n = b.readUInt32LE(12);
  const dataLen = b.readUInt32LE(16);
  const total = FIXED + volLen + laneLen + n * PER_UNIT + dataLen + 4;
  if (total !== b.length) throw new SegmentFormatError("segment form length mismatch", { expected: total, got: b.length });
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
    if (!Number.isSafeInteger(records) || records < 1) throw new SegmentFormatError("bad unit range", { i, firstSeq, lastSeq });
    const size = unitRecordBytes({ firstSeq, lastSeq, payload: { length: payloadLength } as Uint8Array });
    if (at + size > dataLen) throw new SegmentFormatError("unit overruns segment data", { i });
    const digest = data.subarray(at, at + 32);
    const commitTs: number[] = [];
    let p = at + 32;
    for (let r = 0; r < records; r++, p += 8) commitTs.push(data.readDoubleLE(p));
    const unit: TransportUnit = { volume, lane, term, firstSeq, lastSeq, commitTs, payload: data.subarray(p, p + payloadLength), digest };
    units.push(validateTransportUnit(unit));
    at += size;
  }
  if (at !== dataLen) throw new SegmentFormatError("segment data has trailing bytes", { used: at, dataLen });
  return { volume, lane, units, data };
}
