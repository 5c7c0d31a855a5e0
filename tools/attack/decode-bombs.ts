/**
 * Adversarial inputs for every decoder a networked actor runs on bytes it did not make: msgpack
 * headers that claim huge or deeply nested structures, and plain garbage, each padded to `size`
 * bytes (default 1 MiB, NATS's default max_payload). `timeDecoders` runs each input through each
 * decoder and keeps the slowest time: every input must decode or fail, in bounded time.
 */
import "../../actors/index.ts"; // registers every message kind the actors speak
import { DEFAULT_MAX_BYTES, decodeMessage, registeredKinds, specFor } from "../../transport/protocol/index.ts";
import { decodeReceiptBatch } from "../../custody/index.ts";
import { decodeControlEvent } from "../../custody/index.ts";
import { readUnitMessage } from "../../transport/index.ts";

/** One adversarial input. */
export interface Bomb {
  readonly name: string;
  readonly bytes: Uint8Array;
}

function repeat(pattern: number[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = pattern[i % pattern.length]!;
  return out;
}

/** The inputs: nested array32/map32/array16 headers, one-element nesting, huge str/bin/ext claims, garbage. */
export function decodeBombs(size = 1 << 20): Bomb[] {
  let seed = 0x2545f491;
  const random = new Uint8Array(size).map(() => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 24) & 0xff);
  return [
    { name: "nested array16 headers (dc ff ff)", bytes: repeat([0xdc, 0xff, 0xff], size) },
    { name: "nested array32 headers (dd ff ff ff ff)", bytes: repeat([0xdd, 0xff, 0xff, 0xff, 0xff], size) },
    { name: "nested map32 headers (df ff ff ff ff)", bytes: repeat([0xdf, 0xff, 0xff, 0xff, 0xff], size) },
    { name: "one-element nesting, 1M deep (91 91 …)", bytes: repeat([0x91], size) },
    { name: "str32 claiming 4 GiB", bytes: repeat([0xdb, 0xff, 0xff, 0xff, 0xff], size) },
    { name: "bin32 claiming 4 GiB", bytes: repeat([0xc6, 0xff, 0xff, 0xff, 0xff], size) },
    { name: "ext32 claiming 4 GiB", bytes: repeat([0xc9, 0xff, 0xff, 0xff, 0xff, 0x01], size) },
    { name: "fixmap of fixmaps (8f 8f …)", bytes: repeat([0x8f], size) },
    { name: "array of 65535 nils then garbage", bytes: repeat([0xdc, 0xff, 0xff, ...new Array(64).fill(0xc0)], size) },
    { name: "random bytes", bytes: random },
  ];
}

/** A decoder an actor runs on received bytes. */
export interface Decoder {
  readonly name: string;
  /** Largest input it accepts before looking inside (bombs are made this size, at most 1 MiB). */
  readonly maxBytes: number;
  decode(bytes: Uint8Array): unknown;
}

/**
 * Every registered wire kind (each `decodeMessage` spec) plus the inner decoders of signed payloads and unit frames.
 */
export function networkDecoders(): Decoder[] {
  const out: Decoder[] = registeredKinds().map(({ kind, version }) => {
    const spec = specFor(kind, version)!;
    return {
      name: `${kind} v${version}`,
      maxBytes: Math.min(MIB, spec.maxBytes ?? DEFAULT_MAX_BYTES),
      decode: (b: Uint8Array) => decodeMessage(spec, b),
    };
  });
  out.push({ name: "receipt batch body", maxBytes: MIB, decode: (b) => decodeReceiptBatch(b) });
  out.push({ name: "control event bytes", maxBytes: MIB, decode: (b) => decodeControlEvent(b) });
  out.push({
    name: "unit frame (unit subject)",
    maxBytes: MIB,
    decode: (b) => readUnitMessage({ data: b, headers: {} }, undefined),
  });
  return out;
}

/** Result of one input through one decoder. */
export interface DecodeTiming {
  readonly decoder: string;
  readonly bomb: string;
  readonly ms: number;
  /** true when the decoder refused the input with an error (the expected outcome). */
  readonly refused: boolean;
}

const MIB = 1 << 20;

/** Timed tries per (decoder, bomb) pair; the fastest is the decoder's own cost. */
const TRIES = 3;

/**
 * Runs every bomb, made as large as each decoder accepts, through it (after one warm-up pass) and
 * returns each timing: the fastest of `TRIES` tries, because on a shared machine a single try also
 * times whatever preempted the process, and a slow decoder is slow on every try.
 */
export function timeDecoders(decoders: readonly Decoder[]): DecodeTiming[] {
  const out: DecodeTiming[] = [];
  const bySize = new Map<number, Bomb[]>();
  for (const d of decoders) {
    if (!bySize.has(d.maxBytes)) bySize.set(d.maxBytes, decodeBombs(d.maxBytes));
    for (const b of bySize.get(d.maxBytes)!) {
      try {
        d.decode(b.bytes);
      } catch {
        /* warm-up */
      }
      let ms = Infinity;
      let refused = false;
      for (let i = 0; i < TRIES; i++) {
        const t0 = performance.now();
        try {
          d.decode(b.bytes);
          refused = false;
        } catch {
          refused = true;
        }
        ms = Math.min(ms, performance.now() - t0);
      }
      out.push({ decoder: d.name, bomb: b.name, ms, refused });
    }
  }
  return out;
}
