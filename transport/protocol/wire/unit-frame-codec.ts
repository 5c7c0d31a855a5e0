import { WireError, WireErrorCode } from "./wire-error.ts";
import { FRAME_MAX_UNITS, UNIT_MAX_BYTES } from "./limits.ts";
import type { WireUnitFrame } from "./unit-schemas.ts";
import {
  after,
  ARRAY,
  BIN,
  bytesAt,
  fixstr,
  lengthHeaderBytes,
  readLengthHeader,
  readUint,
  uintBytes,
  writeLengthHeader,
  writeUint,
} from "./msgpack-heads.ts";

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
    throw new WireError(
      WireErrorCode.InvalidField,
      `unit-frame: needs 2..${FRAME_MAX_UNITS} units with one figure each`,
      { kind: "unit-frame", field: "units" },
    );
  }
  let size = ENVELOPE_HEAD.length + 2 * lengthHeaderBytes(n, ARRAY) + SENT_KEY.length;
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const st = sentThrough[i]!;
    if (!Number.isSafeInteger(st) || st <= prev) {
      throw new WireError(WireErrorCode.InvalidField, "unit-frame: sentThrough must increase strictly", {
        kind: "unit-frame",
        field: `sentThrough.${i}`,
      });
    }
    prev = st;
    size += lengthHeaderBytes(units[i]!.byteLength, BIN) + units[i]!.byteLength + uintBytes(st);
  }
  if (size > UNIT_MAX_BYTES) {
    throw new WireError(
      WireErrorCode.TooLarge,
      `unit-frame: encoding of ${size} bytes exceeds maxBytes ${UNIT_MAX_BYTES}`,
      { kind: "unit-frame", size, maxBytes: UNIT_MAX_BYTES },
    );
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

/** fixmap{k: "unit-frame", v: 1, b: fixmap{units: …}} up to the units array header. */
const ENVELOPE_HEAD = Uint8Array.from([
  0x83,
  ...fixstr("k"),
  ...fixstr("unit-frame"),
  ...fixstr("v"),
  0x01,
  ...fixstr("b"),
  0x82,
  ...fixstr("units"),
]);
const SENT_KEY = fixstr("sentThrough");

/**
 * Reads an untraced frame laid out exactly as `writeUnitFrame` writes it; undefined for anything
 * else (the general decoder then decides). Units come back as views of `bytes`, as from the
 * general decoder. Never accepts what the general path refuses.
 */
export function fastDecodeUnitFrame(bytes: Uint8Array): WireUnitFrame | undefined {
  const b = bytes;
  if (!bytesAt(b, 0, ENVELOPE_HEAD)) return undefined;
  const n = readLengthHeader(b, ENVELOPE_HEAD.length, ARRAY);
  let o = after.o;
  if (n < 2 || n > FRAME_MAX_UNITS) return undefined;
  const units: Uint8Array[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const len = readLengthHeader(b, o, BIN);
    if (len < 0 || after.o + len > b.length) return undefined;
    units[i] = b.subarray(after.o, after.o + len);
    o = after.o + len;
  }
  if (!bytesAt(b, o, SENT_KEY)) return undefined;
  if (readLengthHeader(b, o + SENT_KEY.length, ARRAY) !== n) return undefined;
  o = after.o;
  const sentThrough: number[] = new Array(n);
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const x = readUint(b, o);
    if (x < 0 || !Number.isSafeInteger(x) || x <= prev) return undefined;
    sentThrough[i] = prev = x;
    o = after.o;
  }
  return o === b.length ? { units, sentThrough } : undefined;
}
