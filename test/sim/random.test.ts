import test from "ava";
import fc from "fast-check";
import { cryptoRandom, RandomArgumentError, seededRandom, type Random } from "../../core/random.ts";

const draw = (r: Random, n: number) => Array.from({ length: n }, () => r.next());

test("the same seed yields the same stream", (t) => {
  fc.assert(
    fc.property(fc.integer(), (seed) => {
      const a = seededRandom(seed);
      const b = seededRandom(seed);
      return JSON.stringify([draw(a, 20), a.int(0, 99), [...a.bytes(7)]]) === JSON.stringify([draw(b, 20), b.int(0, 99), [...b.bytes(7)]]);
    }),
  );
  t.pass();
});

test("different seeds yield different streams", (t) => {
  const seen = new Set<string>();
  for (let s = 0; s < 1000; s++) seen.add(draw(seededRandom(s), 4).join(","));
  t.is(seen.size, 1000);
});

test("a fork depends only on seed and label, not on draws made from the parent", (t) => {
  const a = seededRandom(42);
  const b = seededRandom(42);
  draw(b, 100); // b's parent stream advanced, its fork must not move
  t.deepEqual(draw(a.fork("net"), 10), draw(b.fork("net"), 10));
  t.deepEqual(draw(a.fork("net").fork("edge"), 5), draw(b.fork("net").fork("edge"), 5));
});

test("forks with different labels are independent of each other and of the parent", (t) => {
  const r = seededRandom(7);
  const x = draw(r.fork("x"), 8);
  const y = draw(r.fork("y"), 8);
  const parent = draw(seededRandom(7), 8);
  t.notDeepEqual(x, y);
  t.notDeepEqual(x, parent);
  // Drawing from one fork does not change what a sibling fork yields.
  const r2 = seededRandom(7);
  const fx = r2.fork("x");
  draw(fx, 50);
  t.deepEqual(draw(r2.fork("y"), 8), y);
});

test("values stay in range: next in [0,1), int inclusive, pick from the array", (t) => {
  fc.assert(
    fc.property(fc.integer(), fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 1000 }), (seed, lo, span) => {
      const r = seededRandom(seed);
      const v = r.next();
      const i = r.int(lo, lo + span);
      const p = r.pick(["a", "b", "c"]);
      return v >= 0 && v < 1 && i >= lo && i <= lo + span && Number.isInteger(i) && ["a", "b", "c"].includes(p);
    }),
  );
  t.pass();
});

test("int covers both ends of a small range and is roughly uniform", (t) => {
  const r = seededRandom("uniform");
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 4000; i++) counts[r.int(0, 3)]! += 1;
  for (const c of counts) t.true(c > 850 && c < 1150, `count ${c}`);
});

test("shuffle returns a permutation and leaves the input alone", (t) => {
  const input = Array.from({ length: 20 }, (_, i) => i);
  const out = seededRandom(3).shuffle(input);
  t.deepEqual([...out].sort((a, b) => a - b), input);
  t.notDeepEqual(out, input);
  t.deepEqual(input, Array.from({ length: 20 }, (_, i) => i));
});

test("bad arguments throw RandomArgumentError with code invalid_random_argument", (t) => {
  const r = seededRandom(1);
  for (const f of [() => r.int(5, 4), () => r.int(0.5, 2), () => r.pick([]), () => r.bytes(-1)]) {
    const err = t.throws(f, { instanceOf: RandomArgumentError });
    t.is(err?.code, "invalid_random_argument");
  }
});

test("the crypto Random yields in-range values that differ between instances", (t) => {
  const a = cryptoRandom();
  const b = cryptoRandom();
  const xs = draw(a, 50);
  t.true(xs.every((x) => x >= 0 && x < 1));
  t.notDeepEqual(xs, draw(b, 50));
  t.is(a.bytes(33).length, 33);
  t.notDeepEqual(draw(a.fork("x"), 4), draw(a.fork("x"), 4));
});
