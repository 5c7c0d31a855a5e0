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
  let size = ENVELOPE_HEAD.length + arrayHeaderBytes(n) + SENT_KEY.length + arrayHeaderBytes(n);
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const st = sentThrough[i]!;
    if (!Number.isSafeInteger(st) || st <= prev) {
      throw new WireError(WireErrorCode.InvalidField, "unit-frame: sentThrough must increase strictly", { kind: "unit-frame", field: `sentThrough.${i}` });
    }
    prev = st;
    size += binHeaderBytes(units[i]!.byteLength) + units[i]!.byteLength + uintBytes(st);
  }
  if (size > UNIT_MAX_BYTES) {
    throw new WireError(WireErrorCode.TooLarge, `unit-frame: encoding of ${size} bytes exceeds maxBytes ${UNIT_MAX_BYTES}`, { kind: "unit-frame", size, maxBytes: UNIT_MAX_BYTES });
  }
  // Uninitialized memory (every byte is written below), as a plain Uint8Array like encodeMessage returns.
  const raw = Buffer.allocUnsafe(size);
  const out = new Uint8Array(raw.buffer, raw.byteOffset, size);
  const view = new DataView(raw.buffer, raw.byteOffset, size);
  out.set(ENVELOPE_HEAD, 0);
  let o = writeArrayHeader(view, ENVELOPE_HEAD.length, n);
  for (const u of units) {
    o = writeBinHeader(view, o, u.byteLength);
    out.set(u, o);
    o += u.byteLength;
  }
  out.set(SENT_KEY, o);
  o = writeArrayHeader(view, o + SENT_KEY.length, n);
  for (const st of sentThrough) o = writeUint(view, o, st);
  return out;
}

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
/** fixmap{k: "unit-frame", v: 1, b: fixmap{units: …}} up to the units array header. */
const ENVELOPE_HEAD = Uint8Array.from([0x83, 0xa1, ...ascii("k"), 0xaa, ...ascii("unit-frame"), 0xa1, ...ascii("v"), 0x01, 0xa1, ...ascii("b"), 0x82, 0xa5, ...ascii("units")]);
const SENT_KEY = Uint8Array.from([0xab, ...ascii("sentThrough")]);

function arrayHeaderBytes(n: number): number {
  return n < 16 ? 1 : n < 0x10000 ? 3 : 5;
}

function writeArrayHeader(v: DataView, o: number, n: number): number {
  if (n < 16) {
    v.setUint8(o, 0x90 | n);
    return o + 1;
  }
  if (n < 0x10000) {
    v.setUint8(o, 0xdc);
    v.setUint16(o + 1, n);
    return o + 3;
  }
  v.setUint8(o, 0xdd);
  v.setUint32(o + 1, n);
  return o + 5;
}

function binHeaderBytes(n: number): number {
  return n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
}

function writeBinHeader(v: DataView, o: number, n: number): number {
  if (n < 0x100) {
    v.setUint8(o, 0xc4);
    v.setUint8(o + 1, n);
    return o + 2;
  }
  if (n < 0x10000) {
    v.setUint8(o, 0xc5);
    v.setUint16(o + 1, n);
    return o + 3;
  }
  v.setUint8(o, 0xc6);
  v.setUint32(o + 1, n);
  return o + 5;
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
  let o = ENVELOPE_HEAD.length;
  const head = readArrayHeader(b, o);
  if (head === undefined) return undefined;
  const n = head.n;
  o = head.o;
  if (n < 2 || n > FRAME_MAX_UNITS) return undefined;
  const units: Uint8Array[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const h = b[o];
    const size = h === 0xc4 ? 1 : h === 0xc5 ? 2 : h === 0xc6 ? 4 : -1;
    if (size < 0 || o + 1 + size > b.length) return undefined;
    const len = size === 1 ? b[o + 1]! : size === 2 ? (b[o + 1]! << 8) | b[o + 2]! : b[o + 1]! * 0x1000000 + ((b[o + 2]! << 16) | (b[o + 3]! << 8) | b[o + 4]!);
    const start = o + 1 + size;
    if (start + len > b.length) return undefined;
    units[i] = b.subarray(start, start + len);
    o = start + len;
  }
  if (o + SENT_KEY.length > b.length) return undefined;
  for (let i = 0; i < SENT_KEY.length; i++) if (b[o + i] !== SENT_KEY[i]) return undefined;
  const sentHead = readArrayHeader(b, o + SENT_KEY.length);
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

function readArrayHeader(b: Uint8Array, o: number): { n: number; o: number } | undefined {
  const h = b[o];
  if (h === undefined) return undefined;
  if ((h & 0xf0) === 0x90) return { n: h & 0x0f, o: o + 1 };
  if (h === 0xdc && o + 3 <= b.length) return { n: (b[o + 1]! << 8) | b[o + 2]!, o: o + 3 };
  return undefined;
}
