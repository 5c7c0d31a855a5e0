import { unitRecordBytes } from "../../arena/index.ts";
import { makeTransportUnit } from "../../lanes/index.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/index.ts";

/** Units encoded ahead of a timed run: the wire form of unit `i` and its arena record size. */
export interface EncodedUnits {
  readonly count: number;
  at(i: number): { data: Uint8Array; bytes: number };
}

/**
 * Encoded units `from..from+count-1` of one lane, `size` payload bytes each, back to back in one
 * buffer (no object per unit stays alive, so a long run does not measure the garbage collector).
 */
export function encodedUnits(volume: string, lane: string, size: number, count: number, from = 1): EncodedUnits {
  const payload = new Uint8Array(size).fill(9);
  const offsets = new Float64Array(count + 1);
  let flat = new Uint8Array(0);
  let bytes = 0;
  let o = 0;
  for (let k = 0; k < count; k++) {
    const s = from + k;
    const u = makeTransportUnit({ volume, lane, term: 1, firstSeq: s, lastSeq: s, commitTs: [Date.now()], payload });
    const e = encodeMessage(unitSpec, u);
    if (flat.length < o + e.length) {
      const grown = new Uint8Array(Math.max(2 * flat.length, 2 * (o + e.length)));
      grown.set(flat.subarray(0, o));
      flat = grown;
    }
    flat.set(e, o);
    offsets[k] = o;
    o += e.length;
    bytes = unitRecordBytes(u);
  }
  offsets[count] = o;
  return { count, at: (i) => ({ data: flat.subarray(offsets[i]!, offsets[i + 1]!), bytes }) };
}
