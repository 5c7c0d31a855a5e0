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
    const h = b[o]!;
    let skip = 0; // payload bytes after the head
    let items = -1; // elements of a container head, -1 for a scalar
    let head = 1;
    if (h <= 0x7f || h >= 0xe0 || h === 0xc0 || h === 0xc2 || h === 0xc3) {
      // fixint, nil, booleans
    } else if (h <= 0x8f) items = (h & 0x0f) * 2;
    else if (h <= 0x9f) items = h & 0x0f;
    else if (h <= 0xbf) skip = h & 0x1f;
    else {
      switch (h) {
        case 0xc4:
        case 0xd9:
          skip = be(b, o + 1, 1);
          head = 2;
          break; // bin8, str8
        case 0xc5:
        case 0xda:
          skip = be(b, o + 1, 2);
          head = 3;
          break; // bin16, str16
        case 0xc6:
        case 0xdb:
          skip = be(b, o + 1, 4);
          head = 5;
          break; // bin32, str32
        case 0xc7:
          skip = be(b, o + 1, 1) + 1;
          head = 2;
          break; // ext8 (+ type byte)
        case 0xc8:
          skip = be(b, o + 1, 2) + 1;
          head = 3;
          break; // ext16
        case 0xc9:
          skip = be(b, o + 1, 4) + 1;
          head = 5;
          break; // ext32
        case 0xca:
          skip = 4;
          break; // float32
        case 0xcb:
          skip = 8;
          break; // float64
        case 0xcc:
        case 0xd0:
          skip = 1;
          break;
        case 0xcd:
        case 0xd1:
          skip = 2;
          break;
        case 0xce:
        case 0xd2:
          skip = 4;
          break;
        case 0xcf:
        case 0xd3:
          skip = 8;
          break;
        case 0xd4:
          skip = 2;
          break; // fixext 1..16 (+ type byte)
        case 0xd5:
          skip = 3;
          break;
        case 0xd6:
          skip = 5;
          break;
        case 0xd7:
          skip = 9;
          break;
        case 0xd8:
          skip = 17;
          break;
        case 0xdc:
          items = be(b, o + 1, 2);
          head = 3;
          break; // array16
        case 0xdd:
          items = be(b, o + 1, 4);
          head = 5;
          break; // array32
        case 0xde:
          items = be(b, o + 1, 2) * 2;
          head = 3;
          break; // map16
        case 0xdf:
          items = be(b, o + 1, 4) * 2;
          head = 5;
          break; // map32
        default:
          fail(`invalid head 0x${h.toString(16)}`, o); // 0xc1
      }
    }
    o += head;
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
