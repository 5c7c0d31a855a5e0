import type { WireUnit } from "./unit-schemas.ts";
import { after, ARRAY, BIN, bytesAt, fixstr, readLengthHeader, readUint, type LengthTags } from "./msgpack-heads.ts";

/**
 * Reads a `unit` v1 message laid out exactly as `encodeMessage(unitSpec, …)` writes it (envelope
 * keys k, v, b; body keys in schema order; ASCII identifiers; no required features) without the
 * general msgpack decoder, and returns undefined for anything else — the general path then
 * decides, and names whatever is wrong. It never accepts what the general path refuses: a
 * property test holds the two to the same result. This is the holder's per-unit hot path.
 */
export function fastDecodeUnit(bytes: Uint8Array): WireUnit | undefined {
  const r = reader.reset(bytes);
  if (!r.expect(UNIT_ENVELOPE_HEAD)) return undefined;
  if (!r.expect(KEY_VOLUME)) return undefined;
  const volume = r.token(lastVolume);
  if (volume === undefined) return undefined;
  lastVolume = volume;
  if (!r.expect(KEY_LANE)) return undefined;
  const lane = r.token(lastLane);
  if (lane === undefined) return undefined;
  lastLane = lane;
  if (!r.expect(KEY_TERM)) return undefined;
  const term = r.uint();
  if (!r.expect(KEY_FIRST_SEQ)) return undefined;
  const firstSeq = r.uint();
  if (!r.expect(KEY_LAST_SEQ)) return undefined;
  const lastSeq = r.uint();
  if (term === undefined || firstSeq === undefined || lastSeq === undefined || lastSeq < firstSeq) return undefined;
  if (!r.expect(KEY_COMMIT_TS)) return undefined;
  const count = r.arrayHeader();
  if (count === undefined || count !== lastSeq - firstSeq + 1) return undefined;
  const commitTs: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const ts = r.number();
    if (ts === undefined || !(ts >= 0) || ts === Infinity) return undefined;
    commitTs[i] = ts;
  }
  if (!r.expect(KEY_PAYLOAD)) return undefined;
  const payload = r.bin();
  if (!r.expect(KEY_DIGEST)) return undefined;
  const digest = r.bin();
  if (payload === undefined || digest === undefined || digest.byteLength !== 32 || !r.atEnd()) return undefined;
  return { volume: volume.text, lane: lane.text, term, firstSeq, lastSeq, commitTs, payload, digest };
}

/** A decoded identifier and its bytes (consecutive units of a lane repeat the same ones). */
interface Token {
  readonly bytes: Uint8Array;
  readonly text: string;
}
let lastVolume: Token | undefined;
let lastLane: Token | undefined;

const key = fixstr;
/** fixmap{k: "unit", v: 1, b: fixmap(8)…} */
const UNIT_ENVELOPE_HEAD = Uint8Array.from([0x83, ...key("k"), ...key("unit"), ...key("v"), 0x01, ...key("b"), 0x88]);
const KEY_VOLUME = key("volume");
const KEY_LANE = key("lane");
const KEY_TERM = key("term");
const KEY_FIRST_SEQ = key("firstSeq");
const KEY_LAST_SEQ = key("lastSeq");
const KEY_COMMIT_TS = key("commitTs");
const KEY_PAYLOAD = key("payload");
const KEY_DIGEST = key("digest");
/**
 * Same rule as transport/protocol/subjects.ts tokens, for ASCII: no '.', '*', '>', whitespace, control
 * characters or DEL.
 */
const FORBIDDEN = new Uint8Array(128);
for (const c of [0x2e, 0x2a, 0x3e, 0x20, 0x7f]) FORBIDDEN[c] = 1;
for (let c = 0; c < 0x20; c++) FORBIDDEN[c] = 1;

/**
 * A cursor over one encoding; one instance is reused (decoding is synchronous), so a unit costs no reader allocation.
 */
class Reader {
  private o = 0;
  private b: Uint8Array = new Uint8Array(0);

  reset(b: Uint8Array): this {
    this.b = b;
    this.o = 0;
    return this;
  }

  atEnd(): boolean {
    return this.o === this.b.length;
  }

  /** Consumes `bytes` when they come next. */
  expect(bytes: Uint8Array): boolean {
    if (!bytesAt(this.b, this.o, bytes)) return false;
    this.o += bytes.length;
    return true;
  }

  /** A fixstr/str8 of 1..128 ASCII token characters; reuses `last` when the bytes repeat. */
  token(last: Token | undefined): Token | undefined {
    const b = this.b;
    const h = b[this.o];
    let n: number;
    let start: number;
    if (h === undefined) return undefined;
    if ((h & 0xe0) === 0xa0) {
      n = h & 0x1f;
      start = this.o + 1;
    } else if (h === 0xd9 && this.o + 1 < b.length) {
      n = b[this.o + 1]!;
      start = this.o + 2;
    } else return undefined;
    if (n === 0 || n > 128 || start + n > b.length) return undefined;
    this.o = start + n;
    if (last !== undefined && last.bytes.length === n) {
      let same = true;
      for (let i = 0; i < n && same; i++) same = b[start + i] === last.bytes[i];
      if (same) return last;
    }
    let text = "";
    for (let i = 0; i < n; i++) {
      const c = b[start + i]!;
      if (c >= 0x80 || FORBIDDEN[c] === 1) return undefined;
      text += String.fromCharCode(c);
    }
    return { bytes: b.slice(start, start + n), text };
  }

  /** A non-negative safe integer (what the schema's `uint` accepts). */
  uint(): number | undefined {
    const x = this.number();
    return x !== undefined && Number.isSafeInteger(x) && x >= 0 ? x : undefined;
  }

  /** A number in the forms our encoder writes: an unsigned integer, or a float64. */
  number(): number | undefined {
    const b = this.b;
    const o = this.o;
    if (b[o] !== 0xcb) {
      const x = readUint(b, o);
      if (x < 0) return undefined;
      this.o = after.o;
      return x;
    }
    if (o + 9 > b.length) return undefined;
    this.o = o + 9;
    // Big-endian float64 through a reused scratch in host byte order.
    for (let i = 0; i < 8; i++) F64_BYTES[LITTLE_ENDIAN ? i : 7 - i] = b[o + 8 - i]!;
    return F64[0]!;
  }

  /** An array header: the element count. */
  arrayHeader(): number | undefined {
    return this.length(ARRAY);
  }

  /** A bin8/16/32 as a view (no copy), like the general decoder. */
  bin(): Uint8Array | undefined {
    const start = this.o;
    const n = this.length(BIN);
    if (n === undefined || this.o + n > this.b.length) {
      this.o = start;
      return undefined;
    }
    this.o += n;
    return this.b.subarray(this.o - n, this.o);
  }

  private length(k: LengthTags): number | undefined {
    const n = readLengthHeader(this.b, this.o, k);
    if (n < 0) return undefined;
    this.o = after.o;
    return n;
  }
}

const F64 = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const reader = new Reader();
