/**
 * The few msgpack headers the per-message fast paths read and write by hand (`unit-fast-decode.ts`,
 * `unit-frame-codec.ts`, and the receipt-batch sender peek in custody/receipt-batch.ts): length
 * headers of arrays, bins and strings, and unsigned integers, in exactly the forms @msgpack/msgpack
 * uses. Readers return -1 for anything they do not recognise.
 */

/** The bytes of an ASCII string. */
export const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

/** The msgpack encoding of a short ASCII string (fixstr: at most 31 characters), e.g. a map key. */
export const fixstr = (s: string): Uint8Array => Uint8Array.from([0xa0 | s.length, ...ascii(s)]);

/** Whether `bytes` come next in `b` at `o`. */
export function bytesAt(b: Uint8Array, o: number, bytes: Uint8Array): boolean {
  if (o + bytes.length > b.length) return false;
  for (let i = 0; i < bytes.length; i++) if (b[o + i] !== bytes[i]) return false;
  return true;
}

/** A msgpack length header family: a fix form up to `fixMax`, an 8-bit form (bin only), then 16- and 32-bit forms. */
export interface LengthTags {
  readonly fixMax: number;
  readonly fix: number;
  readonly tag8?: number;
  readonly tag16: number;
  readonly tag32: number;
}
export const ARRAY: LengthTags = { fixMax: 15, fix: 0x90, tag16: 0xdc, tag32: 0xdd };
export const BIN: LengthTags = { fixMax: -1, fix: 0, tag8: 0xc4, tag16: 0xc5, tag32: 0xc6 };
export const STR: LengthTags = { fixMax: 31, fix: 0xa0, tag8: 0xd9, tag16: 0xda, tag32: 0xdb };

/** Bytes `writeLengthHeader` writes for length `n`. */
export function lengthHeaderBytes(n: number, k: LengthTags): number {
  return n <= k.fixMax ? 1 : k.tag8 !== undefined && n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
}

/** Writes the shortest header of family `k` for length `n`; returns the offset after it. */
export function writeLengthHeader(v: DataView, o: number, n: number, k: LengthTags): number {
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

/**
 * Where the last successful `readLengthHeader` / `readUint` ended. The readers return a plain
 * number (-1: not recognised) and leave the next offset here, so the per-unit hot path allocates
 * nothing; read it right after the call (reading is synchronous).
 */
export const after = { o: 0 };

/** Reads a length header of family `k` at `o`: the length (offset after it in `after.o`), or -1. */
export function readLengthHeader(b: Uint8Array, o: number, k: LengthTags): number {
  const h = b[o];
  if (h === undefined) return -1;
  if (k.fixMax >= 0 && h >= k.fix && h <= k.fix + k.fixMax) {
    after.o = o + 1;
    return h - k.fix;
  }
  const size = h === k.tag8 ? 1 : h === k.tag16 ? 2 : h === k.tag32 ? 4 : -1;
  if (size < 0 || o + 1 + size > b.length) return -1;
  let n = 0;
  for (let i = 1; i <= size; i++) n = n * 256 + b[o + i]!;
  after.o = o + 1 + size;
  return n;
}

/** An unsigned integer (positive fixint, uint 8/16/32/64) at `o` (offset after it in `after.o`), or -1. */
export function readUint(b: Uint8Array, o: number): number {
  const h = b[o];
  if (h === undefined) return -1;
  if (h < 0x80) {
    after.o = o + 1;
    return h;
  }
  const need = h === 0xcc ? 1 : h === 0xcd ? 2 : h === 0xce ? 4 : h === 0xcf ? 8 : -1;
  if (need < 0 || o + 1 + need > b.length) return -1;
  let value = 0;
  for (let k = 1; k <= need; k++) value = value * 256 + b[o + k]!;
  after.o = o + 1 + need;
  return value;
}

/** Bytes `writeUint` writes for `x`. */
export function uintBytes(x: number): number {
  return x < 0x80 ? 1 : x < 0x100 ? 2 : x < 0x10000 ? 3 : x < 0x100000000 ? 5 : 9;
}

/** Writes `x` (a non-negative safe integer) in the shortest unsigned form; returns the offset after it. */
export function writeUint(v: DataView, o: number, x: number): number {
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
