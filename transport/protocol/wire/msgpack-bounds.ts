import { WireError, WireErrorCode } from "./wire-error.ts";

/**
 * A linear pre-scan of one msgpack value that every general decode runs first, so hostile input
 * fails before anything is allocated. @msgpack/msgpack allocates a container as soon as it reads
 * its header (`new Array(n)`), so a few KB of nested `array16(65535)` headers used to take
 * gigabytes and seconds. Here a container may claim only as many elements as bytes remain — each
 * element needs at least one — counted across every open container together, and nesting is
 * bounded. The scan itself allocates nothing per element and reads each byte once.
 */

/** Deepest nesting any wire message of ours needs is well below this. */
export const MAX_MSGPACK_DEPTH = 32;

function fail(message: string, offset: number): never {
  throw new WireError(WireErrorCode.Malformed, `not a bounded msgpack value: ${message}`, { offset });
}

function be(b: Uint8Array, o: number, n: number): number {
  if (o + n > b.length) fail("truncated header", o);
  let x = 0;
  for (let i = 0; i < n; i++) x = x * 256 + b[o + i]!;
  return x;
}

/** What a value's head says: its own length, the payload bytes after it, its elements (containers). */
interface Head {
  /** Bytes of the head itself. */
  length: number;
  /** Payload bytes after the head. */
  skip: number;
  /** Elements of a container head, -1 for a scalar. */
  items: number;
}

/** One Head reused by every scan (scans are synchronous), so reading a value allocates nothing. */
const head: Head = { length: 1, skip: 0, items: -1 };

/** Reads the head of the value at `o` into `out`. Throws WireError `malformed` on an invalid or truncated head. */
function readHead(b: Uint8Array, o: number, out: Head): void {
  const h = b[o]!;
  out.length = 1;
  out.skip = 0;
  out.items = -1;
  if (h <= 0x7f || h >= 0xe0 || h === 0xc0 || h === 0xc2 || h === 0xc3) {
    // fixint, nil, booleans
  } else if (h <= 0x8f) out.items = (h & 0x0f) * 2;
  else if (h <= 0x9f) out.items = h & 0x0f;
  else if (h <= 0xbf) out.skip = h & 0x1f;
  else if (!readSizedHead(b, o, h, out) && !readContainerHead(b, o, h, out)) {
    const skip = fixedPayloadBytes(h);
    if (skip === undefined) fail(`invalid head 0x${h.toString(16)}`, o); // 0xc1
    out.skip = skip;
  }
}

/** bin, str and ext heads: their payload length follows the head byte. False for any other head. */
function readSizedHead(b: Uint8Array, o: number, h: number, out: Head): boolean {
  switch (h) {
    case 0xc4:
    case 0xd9:
      out.skip = be(b, o + 1, 1);
      out.length = 2;
      break; // bin8, str8
    case 0xc5:
    case 0xda:
      out.skip = be(b, o + 1, 2);
      out.length = 3;
      break; // bin16, str16
    case 0xc6:
    case 0xdb:
      out.skip = be(b, o + 1, 4);
      out.length = 5;
      break; // bin32, str32
    case 0xc7:
      out.skip = be(b, o + 1, 1) + 1;
      out.length = 2;
      break; // ext8 (+ type byte)
    case 0xc8:
      out.skip = be(b, o + 1, 2) + 1;
      out.length = 3;
      break; // ext16
    case 0xc9:
      out.skip = be(b, o + 1, 4) + 1;
      out.length = 5;
      break; // ext32
    default:
      return false;
  }
  return true;
}

/** array16/32 and map16/32 heads: their element count follows the head byte. False for any other head. */
function readContainerHead(b: Uint8Array, o: number, h: number, out: Head): boolean {
  switch (h) {
    case 0xdc:
      out.items = be(b, o + 1, 2);
      out.length = 3;
      break; // array16
    case 0xdd:
      out.items = be(b, o + 1, 4);
      out.length = 5;
      break; // array32
    case 0xde:
      out.items = be(b, o + 1, 2) * 2;
      out.length = 3;
      break; // map16
    case 0xdf:
      out.items = be(b, o + 1, 4) * 2;
      out.length = 5;
      break; // map32
    default:
      return false;
  }
  return true;
}

/** Payload bytes of a fixed-size head (floats, ints, fixext); undefined for any other head. */
function fixedPayloadBytes(h: number): number | undefined {
  switch (h) {
    case 0xca:
      return 4; // float32
    case 0xcb:
      return 8; // float64
    case 0xcc:
    case 0xd0:
      return 1;
    case 0xcd:
    case 0xd1:
      return 2;
    case 0xce:
    case 0xd2:
      return 4;
    case 0xcf:
    case 0xd3:
      return 8;
    case 0xd4:
      return 2; // fixext 1..16 (+ type byte)
    case 0xd5:
      return 3;
    case 0xd6:
      return 5;
    case 0xd7:
      return 9;
    case 0xd8:
      return 17;
    default:
      return undefined;
  }
}

/**
 * Throws WireError `malformed` unless `bytes` starts with one msgpack value whose every length
 * fits in the bytes that remain and whose nesting is at most `maxDepth`. Returns the offset after
 * the value (trailing bytes are the decoder's to refuse).
 */
export function assertBoundedMsgpack(bytes: Uint8Array, maxDepth = MAX_MSGPACK_DEPTH): number {
  const b = bytes;
  // Elements still to read, per open container; `pending` is their sum (plus the top value).
  const open: number[] = [];
  let pending = 1;
  let o = 0;
  while (pending > 0) {
    if (o >= b.length) fail("truncated", o);
    readHead(b, o, head);
    const { skip, items } = head;
    o += head.length;
    if (o + skip > b.length) fail(`length ${skip} runs past the end`, o);
    o += skip;
    // This value is read: it leaves its container.
    pending--;
    const top = open.length - 1;
    if (top >= 0) open[top] = open[top]! - 1;
    if (items > 0) {
      if (open.length >= maxDepth) fail(`nesting deeper than ${maxDepth}`, o);
      pending += items;
      if (pending > b.length - o) fail(`containers claim ${pending} elements with ${b.length - o} bytes left`, o);
      open.push(items);
    }
    while (open.length > 0 && open[open.length - 1] === 0) open.pop();
  }
  return o;
}

/** `decoder.decode(bytes)` after `assertBoundedMsgpack`: the only way our code decodes general msgpack. */
export function decodeBounded(decoder: { decode(bytes: Uint8Array): unknown }, bytes: Uint8Array): unknown {
  assertBoundedMsgpack(bytes);
  return decoder.decode(bytes);
}
