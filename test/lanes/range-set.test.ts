import test from "ava";
import fc from "fast-check";
import { RangeSet, InvalidRangeError } from "../../lanes/range-set.ts";

// A model: the plain set of members, over a small universe so collisions are frequent.
const rangeArb = fc.tuple(fc.nat(60), fc.nat(8)).map(([first, len]) => [first, first + len] as [number, number]);
const setArb = fc.array(rangeArb, { maxLength: 8 }).map((rs) => ({ rs: RangeSet.from(rs), model: toModel(rs) }));

function toModel(ranges: [number, number][]): Set<number> {
  const s = new Set<number>();
  for (const [a, b] of ranges) for (let x = a; x <= b; x++) s.add(x);
  return s;
}
function members(rs: RangeSet): number[] {
  const out: number[] = [];
  for (const r of rs.ranges()) for (let x = r.first; x <= r.last; x++) out.push(x);
  return out;
}
const sorted = (s: Set<number>) => [...s].sort((a, b) => a - b);

test("ranges are normalised: sorted, disjoint and non-adjacent", (t) => {
  const rs = RangeSet.from([[5, 7], [1, 2], [3, 3], [9, 10], [10, 12]]);
  t.deepEqual(rs.toJSON(), [[1, 3], [5, 7], [9, 12]]);
  t.is(rs.toString(), "1-3,5-7,9-12");
  t.is(rs.count, 10);
});

test("contiguous prefix and holes are reported, not a high-water mark", (t) => {
  const rs = RangeSet.from([[100, 115], [119, 120]]);
  t.is(rs.max, 120);
  t.is(rs.contiguousThrough(100), 115);
  t.is(rs.contiguousThrough(99), 98, "a missing base gives an empty prefix");
  t.deepEqual(rs.holes(100, 120).toJSON(), [[116, 118]]);
});

test("malformed ranges are rejected with a typed error", (t) => {
  for (const [a, b] of [[-1, 3], [5, 4], [1.5, 2], [0, Number.MAX_SAFE_INTEGER + 2]] as [number, number][]) {
    const err = t.throws(() => RangeSet.of(a, b), { instanceOf: InvalidRangeError });
    t.is(err?.code, "invalid_range");
  }
});

test("set algebra agrees with a plain-set model (property)", (t) => {
  fc.assert(
    fc.property(setArb, setArb, ({ rs: a, model: ma }, { rs: b, model: mb }) => {
      t.deepEqual(members(a), sorted(ma));
      t.deepEqual(members(a.union(b)), sorted(new Set([...ma, ...mb])));
      t.deepEqual(members(a.subtract(b)), sorted(new Set([...ma].filter((x) => !mb.has(x)))));
      t.deepEqual(members(a.intersect(b)), sorted(new Set([...ma].filter((x) => mb.has(x)))));
      t.is(a.coversAll(a.intersect(b)), true);
      t.is(a.union(b).coversAll(b), true);
      for (let x = 0; x < 75; x++) t.is(a.has(x), ma.has(x));
      const base = 10;
      let through = base - 1;
      while (ma.has(through + 1)) through++;
      t.is(a.contiguousThrough(base), through);
      t.true(RangeSet.fromJSON(a.toJSON()).equals(a));
      t.is(a.intersects(b), [...ma].some((x) => mb.has(x)));
      for (const r of b.ranges()) {
        let any = false;
        for (let x = r.first; x <= r.last; x++) any ||= ma.has(x);
        t.is(a.overlaps(r.first, r.last), any);
        t.deepEqual(members(a.add(r.first, r.last)), members(a.union(RangeSet.of(r.first, r.last))));
      }
      const next = (a.max ?? -1) + 1;
      t.deepEqual(members(a.add(next, next + 2)), sorted(new Set([...ma, next, next + 1, next + 2])), "tail extension");
    }),
    { numRuns: 300 },
  );
});

test("a union is in canonical form: exactly the runs of the set built from both inputs' ranges (property)", (t) => {
  fc.assert(
    fc.property(setArb, setArb, ({ rs: a }, { rs: b }) => {
      const expected = RangeSet.from([...a.ranges(), ...b.ranges()]).toJSON();
      t.deepEqual(a.union(b).toJSON(), expected);
      t.deepEqual(b.union(a).toJSON(), expected);
    }),
    { numRuns: 500 },
  );
});

test("RangeSet.parse reads back what toString writes, and refuses anything else with a typed error", (t) => {
  t.is(RangeSet.parse("1-5,7,9-12").toString(), "1-5,7,9-12");
  t.true(RangeSet.parse("∅").isEmpty);
  t.true(RangeSet.parse("3,1-2").equals(RangeSet.of(1, 3)));
  for (const bad of ["1-", "a", "5-3", "1,,2", "-1"]) t.is(t.throws(() => RangeSet.parse(bad))!.constructor, InvalidRangeError, bad);
});
