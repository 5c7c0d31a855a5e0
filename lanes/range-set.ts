import { CustodyError } from "../core/index.ts";

/** An inclusive run of sequence numbers `first..last` (first <= last). */
export interface SeqRange {
  readonly first: number;
  readonly last: number;
}

/** Thrown for a malformed range (negative, non-integer, unsafe, or first > last). */
export class InvalidRangeError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_range", message, detail);
  }
}

function checkRange(first: number, last: number): void {
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last) || first < 0 || last < first) {
    throw new InvalidRangeError(`invalid sequence range ${first}..${last}`, { first, last });
  }
}

/**
 * The canonical runs of the union of two canonical run lists: one linear merge (both are already
 * sorted and valid), joining runs that overlap or touch.
 */
function mergeRuns(a: readonly SeqRange[], b: readonly SeqRange[]): SeqRange[] {
  const out: SeqRange[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const r = j >= b.length || (i < a.length && a[i]!.first <= b[j]!.first) ? a[i++]! : b[j++]!;
    const tail = out[out.length - 1];
    if (tail !== undefined && r.first <= tail.last + 1) {
      if (r.last > tail.last) out[out.length - 1] = { first: tail.first, last: r.last };
    } else out.push(r);
  }
  return out;
}

/**
 * An immutable set of sequence numbers kept as sorted, disjoint, non-adjacent inclusive ranges.
 * This is how retained coverage is stated everywhere (receipts, ledgers, arenas): the exact ranges,
 * the contiguous prefix from a base, and the holes — never a bare high-water mark.
 */
export class RangeSet {
  static readonly EMPTY = new RangeSet([]);

  /** Sorted, disjoint, non-adjacent ranges. Never mutated. */
  private readonly runs: readonly SeqRange[];

  private constructor(runs: readonly SeqRange[]) {
    this.runs = runs;
  }

  /** A set holding exactly `first..last`. Throws InvalidRangeError on a malformed range. */
  static of(first: number, last: number = first): RangeSet {
    checkRange(first, last);
    return new RangeSet([{ first, last }]);
  }

  /**
   * Reads back the human form `toString` writes (`1-5,7,9-12`; `∅` or "" is empty). Throws
   * InvalidRangeError on anything else.
   */
  static parse(text: string): RangeSet {
    if (text === "∅" || text.trim() === "") return RangeSet.EMPTY;
    return RangeSet.from(
      text.split(",").map((part): [number, number] => {
        const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
        if (m === null) throw new InvalidRangeError(`not a range: ${JSON.stringify(part)}`, { text });
        return [Number(m[1]), Number(m[2] ?? m[1])];
      }),
    );
  }

  /** Builds a set from any ranges (overlapping, adjacent, unsorted); validates each one. */
  static from(ranges: Iterable<SeqRange | readonly [number, number]>): RangeSet {
    const list: SeqRange[] = [];
    for (const r of ranges) {
      const first = Array.isArray(r) ? (r as readonly [number, number])[0] : (r as SeqRange).first;
      const last = Array.isArray(r) ? (r as readonly [number, number])[1] : (r as SeqRange).last;
      checkRange(first, last);
      list.push({ first, last });
    }
    list.sort((a, b) => a.first - b.first);
    const merged: SeqRange[] = [];
    for (const r of list) {
      const tail = merged[merged.length - 1];
      if (tail && r.first <= tail.last + 1) {
        if (r.last > tail.last) merged[merged.length - 1] = { first: tail.first, last: r.last };
      } else merged.push(r);
    }
    return new RangeSet(merged);
  }

  /** The inverse of `toJSON`. */
  static fromJSON(pairs: readonly (readonly [number, number])[]): RangeSet {
    return RangeSet.from(pairs);
  }

  /** The ranges in ascending order. */
  ranges(): readonly SeqRange[] {
    return this.runs;
  }

  get isEmpty(): boolean {
    return this.runs.length === 0;
  }

  /** Number of sequence numbers in the set. */
  get count(): number {
    let n = 0;
    for (const r of this.runs) n += r.last - r.first + 1;
    return n;
  }

  /** Lowest member, or undefined when empty. */
  get min(): number | undefined {
    return this.runs[0]?.first;
  }

  /** Highest member, or undefined when empty. A high-water mark alone is never coverage. */
  get max(): number | undefined {
    return this.runs[this.runs.length - 1]?.last;
  }

  private indexAtOrBefore(seq: number): number {
    let lo = 0;
    let hi = this.runs.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.runs[mid]!.first <= seq) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  has(seq: number): boolean {
    const i = this.indexAtOrBefore(seq);
    return i >= 0 && this.runs[i]!.last >= seq;
  }

  /** True when every sequence of `first..last` is in the set. */
  covers(first: number, last: number = first): boolean {
    checkRange(first, last);
    const i = this.indexAtOrBefore(first);
    return i >= 0 && this.runs[i]!.last >= last;
  }

  /** True when every member of `other` is in this set. */
  coversAll(other: RangeSet): boolean {
    return other.runs.every((r) => this.covers(r.first, r.last));
  }

  /** True when the two sets share at least one sequence. Allocates nothing. */
  intersects(other: RangeSet): boolean {
    let i = 0;
    let j = 0;
    while (i < this.runs.length && j < other.runs.length) {
      const a = this.runs[i]!;
      const b = other.runs[j]!;
      if (a.first <= b.last && b.first <= a.last) return true;
      if (a.last < b.last) i++;
      else j++;
    }
    return false;
  }

  /** True when any sequence of `first..last` is in the set (no allocation: the admission hot path). */
  overlaps(first: number, last: number = first): boolean {
    checkRange(first, last);
    const i = this.indexAtOrBefore(last);
    return i >= 0 && this.runs[i]!.last >= first;
  }

  add(first: number, last: number = first): RangeSet {
    checkRange(first, last);
    const n = this.runs.length;
    const tail = this.runs[n - 1];
    // In-order arrival extends the tail run: one array copy, no sort.
    if (tail !== undefined && first === tail.last + 1) {
      const runs = this.runs.slice();
      runs[n - 1] = { first: tail.first, last };
      return new RangeSet(runs);
    }
    return this.union(new RangeSet([{ first, last }]));
  }

  union(other: RangeSet): RangeSet {
    if (other.isEmpty) return this;
    if (this.isEmpty) return other;
    // Fast path for in-order arrival (every unit extends the tail): no sort, one array copy.
    const tail = this.runs[this.runs.length - 1]!;
    const head = other.runs[0]!;
    if (head.first > tail.last) {
      if (head.first > tail.last + 1) return new RangeSet([...this.runs, ...other.runs]);
      const joined: SeqRange = { first: tail.first, last: head.last };
      return new RangeSet([...this.runs.slice(0, -1), joined, ...other.runs.slice(1)]);
    }
    return new RangeSet(mergeRuns(this.runs, other.runs));
  }

  /** Members of this set that are not in `other`. */
  subtract(other: RangeSet): RangeSet {
    if (other.isEmpty || this.isEmpty) return this;
    const out: SeqRange[] = [];
    let j = 0;
    const cut = other.runs;
    for (const r of this.runs) {
      let start = r.first;
      while (j < cut.length && cut[j]!.last < start) j++;
      let k = j;
      while (k < cut.length && cut[k]!.first <= r.last) {
        const c = cut[k]!;
        if (c.first > start) out.push({ first: start, last: c.first - 1 });
        start = Math.max(start, c.last + 1);
        if (start > r.last) break;
        k++;
      }
      if (start <= r.last) out.push({ first: start, last: r.last });
    }
    return new RangeSet(out);
  }

  remove(first: number, last: number = first): RangeSet {
    return this.subtract(RangeSet.of(first, last));
  }

  intersect(other: RangeSet): RangeSet {
    const out: SeqRange[] = [];
    let i = 0;
    let j = 0;
    while (i < this.runs.length && j < other.runs.length) {
      const a = this.runs[i]!;
      const b = other.runs[j]!;
      const first = Math.max(a.first, b.first);
      const last = Math.min(a.last, b.last);
      if (first <= last) out.push({ first, last });
      if (a.last < b.last) i++;
      else j++;
    }
    return new RangeSet(out);
  }

  /**
   * The highest `x` such that every sequence `base..x` is in the set, or `base - 1` when `base`
   * itself is missing (an empty prefix).
   */
  contiguousThrough(base: number): number {
    const i = this.indexAtOrBefore(base);
    if (i < 0 || this.runs[i]!.last < base) return base - 1;
    return this.runs[i]!.last;
  }

  /** The missing ranges between `base` and `through` (inclusive), in order. */
  holes(base: number, through: number): RangeSet {
    if (through < base) return RangeSet.EMPTY;
    return RangeSet.of(base, through).subtract(this);
  }

  equals(other: RangeSet): boolean {
    if (this.runs.length !== other.runs.length) return false;
    return this.runs.every((r, i) => r.first === other.runs[i]!.first && r.last === other.runs[i]!.last);
  }

  /** Compact wire/JSON form: `[[first, last], ...]`. */
  toJSON(): [number, number][] {
    return this.runs.map((r) => [r.first, r.last]);
  }

  /** Human form, e.g. `1-5,7,9-12` (empty set: `∅`). */
  toString(): string {
    if (this.isEmpty) return "∅";
    return this.runs.map((r) => (r.first === r.last ? `${r.first}` : `${r.first}-${r.last}`)).join(",");
  }
}
