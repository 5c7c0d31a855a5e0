import test from "ava";
import fc from "fast-check";
import { splitBySeqs } from "../../actors/repair/copy-over-nats.ts";
import { RangeSet } from "../../lanes/range-set.ts";

test("a copy's ask is cut into at most n consecutive parts of about equal size that together are the ask", (t) => {
  t.deepEqual(splitBySeqs(RangeSet.of(1, 178), 4).map((p) => p.toString()), ["1-45", "46-90", "91-135", "136-178"]);
  t.deepEqual(splitBySeqs(RangeSet.from([[1, 3], [10, 12]]), 4).map((p) => p.toString()), ["1-2", "3,10", "11-12"]);
  t.deepEqual(splitBySeqs(RangeSet.of(7), 4).map((p) => p.toString()), ["7"]);
  t.deepEqual(splitBySeqs(RangeSet.EMPTY, 4), []);
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(1000), fc.nat(40)), { maxLength: 12 }), fc.integer({ min: 1, max: 8 }), (pairs, n) => {
      const seqs = RangeSet.from(pairs.map(([a, k]) => [a, a + k] as [number, number]));
      const parts = splitBySeqs(seqs, n);
      let all = RangeSet.EMPTY;
      let prevMax = -1;
      for (const p of parts) {
        if (p.isEmpty || p.min! <= prevMax || all.intersects(p)) return false;
        prevMax = p.max!;
        all = all.union(p);
      }
      return parts.length <= n && all.equals(seqs);
    }),
  );
});
