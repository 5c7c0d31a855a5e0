import { WireError, WireErrorCode } from "./wire-error.ts";
import { FRAME_MAX_UNITS, UNIT_MAX_BYTES, type WireUnitFrame } from "./messages.ts";

/**
 * The sender's and receiver's per-frame hot paths for untraced `unit-frame` v1 messages, byte-exact
 * with the general codec (tests hold them to it); anything else goes through `encodeMessage` /
 * `decodeAny`.
 */

/**
 * Writes an untraced `unit-frame` v1 message straight into one buffer: the same bytes
 * `encodeMessage(unitFrameSpec, { units, sentThrough })` produces (a test holds the two equal for
 * random frames), with each unit copied once instead of into the encoder and out again. This is
 * the sender's per-frame hot path; traced frames (per-unit headers) use `encodeMessage`.
 * Throws WireError `invalid_field` for a frame the schema would refuse and `too_large` past
 * UNIT_MAX_BYTES.
 */
export function writeUnitFrame(units: readonly Uint8Array[], sentThrough: readonly number[]): Uint8Array {
  const n = units.length;
  if (n < 2 || n > FRAME_MAX_UNITS || sentThrough.length !== n) {
    throw new WireError(WireErrorCode.InvalidField, `unit-frame: needs 2..${FRAME_MAX_UNITS} units with one figure each`, { kind: "unit-frame", field: "units" });
  }
  let size = ENVELOPE_HEAD.length + 2 * lengthHeaderBytes(n, ARRAY) + SENT_KEY.length;
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const st = sentThrough[i]!;
    if (!Number.isSafeInteger(st) || st <= prev) {
      throw new WireError(WireErrorCode.InvalidField, "unit-frame: sentThrough must increase strictly", { kind: "unit-frame", field: `sentThrough.${i}` });
    }
    prev = st;
    size += lengthHeaderBytes(units[i]!.byteLength, BIN) + units[i]!.byteLength + uintBytes(st);
  }
  if (size > UNIT_MAX_BYTES) {
    throw new WireError(WireErrorCode.TooLarge, `unit-frame: encoding of ${size} bytes exceeds maxBytes ${UNIT_MAX_BYTES}`, { kind: "unit-frame", size, maxBytes: UNIT_MAX_BYTES });
  }
  // Uninitialized memory (every byte is written below), as a plain Uint8Array like encodeMessage returns.
  const raw = Buffer.allocUnsafe(size);
  const out = new Uint8Array(raw.buffer, raw.byteOffset, size);
  const view = new DataView(raw.buffer, raw.byteOffset, size);
  out.set(ENVELOPE_HEAD, 0);
  let o = writeLengthHeader(view, ENVELOPE_HEAD.length, n, ARRAY);
  for (const u of units) {
    o = writeLengthHeader(view, o, u.byteLength, BIN);
    out.set(u, o);
    o += u.byteLength;
  }
  out.set(SENT_KEY, o);
  o = writeLengthHeader(view, o + SENT_KEY.length, n, ARRAY);
  for (const st of sentThrough) o = writeUint(view, o, st);
  return out;
}

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
/** fixmap{k: "unit-frame", v: 1, b: fixmap{units: …}} up to the units array header. */
const ENVELOPE_HEAD = Uint8Array.from([0x83, 0xa1, ...ascii("k"), 0xaa, ...ascii("unit-frame"), 0xa1, ...ascii("v"), 0x01, 0xa1, ...ascii("b"), 0x82, 0xa5, ...ascii("units")]);
const SENT_KEY = Uint8Array.from([0xab, ...ascii("sentThrough")]);

/** A msgpack length header family: a fix form up to `fixMax`, an 8-bit form (bin only), then 16- and 32-bit forms. */
interface LengthTags {
  readonly fixMax: number;
  readonly fix: number;
  readonly tag8?: number;
  readonly tag16: number;
  readonly tag32: number;
}
const ARRAY: LengthTags = { fixMax: 15, fix: 0x90, tag16: 0xdc, tag32: 0xdd };
const BIN: LengthTags = { fixMax: -1, fix: 0, tag8: 0xc4, tag16: 0xc5, tag32: 0xc6 };

function lengthHeaderBytes(n: number, k: LengthTags): number {
  return n <= k.fixMax ? 1 : k.tag8 !== undefined && n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
}

function writeLengthHeader(v: DataView, o: number, n: number, k: LengthTags): number {
  if (n <= k.fixMax) {
    v.setUint8(o, k.fix | n);
    return o + 1;
  }
  if (k.tag8 !== undefined && n < 0x100) {
    v.setUint8(o, k.tag8);
    v.setUint8(o + 1, n);
    return o + 2;
  }
  if (n < 0x10000) {
    v.setUint8(o, k.tag16);
    v.setUint16(o + 1, n);
    return o + 3;
  }
  v.setUint8(o, k.tag32);
  v.setUint32(o + 1, n);
  return o + 5;
}

/** Reads a length header of family `k` at `o`: the length and the offset after the header, or undefined. */
function readLengthHeader(b: Uint8Array, o: number, k: LengthTags): { n: number; o: number } | undefined {
  const h = b[o];
  if (h === undefined) return undefined;
  if (k.fixMax >= 0 && h >= k.fix && h <= k.fix + k.fixMax) return { n: h - k.fix, o: o + 1 };
  const size = h === k.tag8 ? 1 : h === k.tag16 ? 2 : h === k.tag32 ? 4 : -1;
  if (size < 0 || o + 1 + size > b.length) return undefined;
  let n = 0;
  for (let i = 1; i <= size; i++) n = n * 256 + b[o + i]!;
  return { n, o: o + 1 + size };
}

function uintBytes(x: number): number {
  return x < 0x80 ? 1 : x < 0x100 ? 2 : x < 0x10000 ? 3 : x < 0x100000000 ? 5 : 9;
}

function writeUint(v: DataView, o: number, x: number): number {
  if (x < 0x80) {
    v.setUint8(o, x);
    return o + 1;
  }
  if (x < 0x100) {
    v.setUint8(o, 0xcc);
    v.setUint8(o + 1, x);
    return o + 2;
  }
  if (x < 0x10000) {
    v.setUint8(o, 0xcd);
    v.setUint16(o + 1, x);
    return o + 3;
  }
  if (x < 0x100000000) {
    v.setUint8(o, 0xce);
    v.setUint32(o + 1, x);
    return o + 5;
  }
  v.setUint8(o, 0xcf);
  v.setUint32(o + 1, Math.floor(x / 0x100000000));
  v.setUint32(o + 5, x >>> 0);
  return o + 9;
}

/**
 * Reads an untraced frame laid out exactly as `writeUnitFrame` writes it; undefined for anything
 * else (the general decoder then decides). Units come back as views of `bytes`, as from the
 * general decoder. Never accepts what the general path refuses.
 */
export function fastDecodeUnitFrame(bytes: Uint8Array): WireUnitFrame | undefined {
  const b = bytes;
  if (b.length < ENVELOPE_HEAD.length) return undefined;
  for (let i = 0; i < ENVELOPE_HEAD.length; i++) if (b[i] !== ENVELOPE_HEAD[i]) return undefined;
  const head = readLengthHeader(b, ENVELOPE_HEAD.length, ARRAY);
  if (head === undefined) return undefined;
  const n = head.n;
  let o = head.o;
  if (n < 2 || n > FRAME_MAX_UNITS) return undefined;
  const units: Uint8Array[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const bin = readLengthHeader(b, o, BIN);
    if (bin === undefined || bin.o + bin.n > b.length) return undefined;
    units[i] = b.subarray(bin.o, bin.o + bin.n);
    o = bin.o + bin.n;
  }
  if (o + SENT_KEY.length > b.length) return undefined;
  for (let i = 0; i < SENT_KEY.length; i++) if (b[o + i] !== SENT_KEY[i]) return undefined;
  const sentHead = readLengthHeader(b, o + SENT_KEY.length, ARRAY);
  if (sentHead === undefined || sentHead.n !== n) return undefined;
  o = sentHead.o;
  const sentThrough: number[] = new Array(n);
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const h = b[o];
    if (h === undefined) return undefined;
    let x: number;
    if (h < 0x80) {
      x = h;
      o += 1;
    } else {
      const need = h === 0xcc ? 1 : h === 0xcd ? 2 : h === 0xce ? 4 : h === 0xcf ? 8 : -1;
      if (need < 0 || o + 1 + need > b.length) return undefined;
      x = 0;
      for (let k = 1; k <= need; k++) x = x * 256 + b[o + k]!;
      o += 1 + need;
    }
    if (!Number.isSafeInteger(x) || x <= prev) return undefined;
    sentThrough[i] = prev = x;
  }
  return o === b.length ? { units, sentThrough } : undefined;
}
