import test from "ava";
import fc from "fast-check";
import { GrowingRangeSet } from "../../lanes/growing-range-set.ts";
import { RangeSet } from "../../lanes/range-set.ts";

// Operations on a small universe: mostly in-order appends (the hot path), some gaps, rewinds and replacements.
const op = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("next" as const), len: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("add" as const), first: fc.nat(80), len: fc.nat(6) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("set" as const), ranges: fc.array(fc.tuple(fc.nat(80), fc.nat(6)), { maxLength: 4 }) }) },
);

test("a growing set answers exactly like the RangeSet it stands for, whatever the order of changes (property)", (t) => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const g = new GrowingRangeSet();
      let model = RangeSet.EMPTY;
      for (const o of ops) {
        if (o.kind === "next") {
          const first = (model.max ?? -1) + 1;
          g.add(first, first + o.len - 1);
          model = model.add(first, first + o.len - 1);
        } else if (o.kind === "add") {
          g.add(o.first, o.first + o.len);
          model = model.add(o.first, o.first + o.len);
        } else {
          model = RangeSet.from(o.ranges.map(([a, n]) => [a, a + n] as [number, number]));
          g.set(model);
        }
        if (!g.value.equals(model) || g.isEmpty !== model.isEmpty) return false;
        for (let a = 0; a < 95; a += 3) {
          for (const n of [0, 2, 7]) {
            if (g.covers(a, a + n) !== model.covers(a, a + n) || g.overlaps(a, a + n) !== model.overlaps(a, a + n)) return false;
          }
          if (g.contiguousThrough(a) !== model.contiguousThrough(a)) return false;
        }
      }
      return true;
    }),
    { numRuns: 400 },
  );
  t.pass();
});

test("appending to the tail does not build a new set until the value is read; a read value never changes", (t) => {
  const g = new GrowingRangeSet(RangeSet.of(1, 10));
  const before = g.value;
  g.add(11, 11);
  g.add(12, 20);
  t.is(before.toString(), "1-10", "an earlier value is immutable");
  t.is(g.value.toString(), "1-20");
  t.is(g.value, g.value, "read twice, the same set");
  t.throws(() => g.add(21, 20), { code: "invalid_range" });
});
