import test from "ava";
import { BadRequestError, DirtyMap } from "../../volume/index.ts";

test("a dirty map lists changed LBAs and a confirmation clears only those at or below the confirmed LSN", (t) => {
  const d = new DirtyMap(10, 0);
  d.mark(2, 3, 5);
  d.mark(3, 1, 9);
  t.deepEqual(d.dirtyLbas(), [2, 3, 4]);
  t.deepEqual(d.dirtyLbas(5), [2, 4]);
  d.confirm(5);
  t.deepEqual(d.dirtyLbas(), [3]);
  t.is(d.size(), 1);
  t.is(d.lsnOf(3), 9);
});

test("marking outside the volume is a BadRequestError and changes nothing", (t) => {
  const d = new DirtyMap(4, 0);
  t.throws(() => d.mark(3, 2, 1), { instanceOf: BadRequestError });
  t.is(d.size(), 0);
});
