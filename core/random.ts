import { randomFillSync } from "node:crypto";
import { CustodyError } from "./custody-error.ts";

/**
 * The randomness seam. Actors, pure modules and the simulator take a Random instead of calling
 * Math.random() or crypto directly, so a seeded run replays exactly. Two implementations:
 * `cryptoRandom()` for production and `seededRandom(seed)` for tests and the simulator.
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [lo, hi] (both inclusive). Throws RandomArgumentError unless lo ≤ hi are safe integers. */
  int(lo: number, hi: number): number;
  /** True with probability `p` (p ≤ 0 never draws true, p ≥ 1 always does). */
  chance(p: number): boolean;
  /** One element of a non-empty array. Throws RandomArgumentError on an empty array. */
  pick<T>(items: readonly T[]): T;
  /** A shuffled copy (Fisher–Yates); the input is not modified. */
  shuffle<T>(items: readonly T[]): T[];
  /** `n` random bytes. Throws RandomArgumentError unless n is a non-negative safe integer. */
  bytes(n: number): Uint8Array;
  /**
   * An independent sub-stream named `label`. For a seeded Random it depends only on the root seed
   * and the chain of labels (never on how many values were drawn), so adding draws in one component
   * does not shift another component's stream.
   */
  fork(label: string): Random;
}

/** A bad argument to a Random method (code `invalid_random_argument`). */
export class RandomArgumentError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_random_argument", message, detail);
  }
}

/** Shared helpers built on `next()` and `nextU32()`. */
abstract class RandomBase implements Random {
  protected abstract nextU32(): number;
  abstract fork(label: string): Random;

  next(): number {
    return this.nextU32() / 0x1_0000_0000;
  }

  int(lo: number, hi: number): number {
    if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo > hi) {
      throw new RandomArgumentError(`int(${lo}, ${hi}) needs safe integers with lo <= hi`, { lo, hi });
    }
    const span = hi - lo + 1;
    // Two 32-bit draws give 53 bits; the modulo bias is negligible for the spans we use.
    const wide = this.nextU32() * 0x20_0000 + (this.nextU32() >>> 11);
    return lo + (wide % span);
  }

  chance(p: number): boolean {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RandomArgumentError("pick() from an empty array", { length: 0 });
    return items[this.int(0, items.length - 1)]!;
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      const tmp = out[i]!;
      out[i] = out[j]!;
      out[j] = tmp;
    }
    return out;
  }

  bytes(n: number): Uint8Array {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new RandomArgumentError(`bytes(${n}) needs a non-negative integer`, { n });
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      const w = this.nextU32();
      for (let k = 0; k < 4 && i + k < n; k++) out[i + k] = (w >>> (8 * k)) & 0xff;
    }
    return out;
  }
}

/** 32-bit FNV-1a of a string: turns fork labels into seed material. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** splitmix32 step: spreads a 32-bit seed into well-mixed state words. */
function splitmix32(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  let z = x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, from PractRand): 128 bits of
 * state, passes PractRand/BigCrush, a few integer ops per draw. Seeded through splitmix32.
 */
class SeededRandom extends RandomBase {
  private a: number;
  private b: number;
  private c: number;
  private d = 1;

  constructor(private readonly key: string) {
    super();
    const h = fnv1a(key);
    this.a = splitmix32(h);
    this.b = splitmix32(this.a ^ 0x6a09e667);
    this.c = splitmix32(this.b ^ 0xbb67ae85);
    for (let i = 0; i < 12; i++) this.nextU32(); // warm up so nearby seeds decorrelate
  }

  protected nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  fork(label: string): Random {
    return new SeededRandom(`${this.key}/${label}`);
  }
}

/** Production randomness from the OS CSPRNG; `fork` returns another independent crypto stream. */
class CryptoRandom extends RandomBase {
  private readonly buf = new Uint32Array(64);
  private pos = 64;

  protected nextU32(): number {
    if (this.pos >= this.buf.length) {
      randomFillSync(this.buf);
      this.pos = 0;
    }
    return this.buf[this.pos++]!;
  }

  fork(_label: string): Random {
    return new CryptoRandom();
  }
}

/** A deterministic Random: the same seed always yields the same stream (and the same forks). */
export function seededRandom(seed: number | string): Random {
  return new SeededRandom(`seed:${String(seed)}`);
}

/** A Random backed by the OS CSPRNG (not reproducible; use in production). */
export function cryptoRandom(): Random {
  return new CryptoRandom();
}
