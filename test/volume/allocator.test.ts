import test from "ava";
import { Allocator, Hold } from "../../volume/allocator.ts";

test("a superseded block is reused only after its superseding LSN is durable and no checkpoint names it", (t) => {
  const a = new Allocator(4);
  const [run] = a.allocate(1)!;
  const p = run!.start;
  a.setCheckpointHolds([p]);
  a.supersede(p, 7);
  a.durableThrough(6);
  t.not(a.holds(p), 0);
  a.durableThrough(7);
  t.is(a.holds(p), Hold.Checkpoint);
  a.setCheckpointHolds([]);
  t.is(a.holds(p), 0);
  t.is(a.freeCount(), 4);
});

test("allocation is next-fit and contiguous when space allows, and refuses when too little is free", (t) => {
  const a = new Allocator(6);
  t.deepEqual(a.allocate(3), [{ start: 0, count: 3 }]);
  t.deepEqual(a.allocate(2), [{ start: 3, count: 2 }]);
  a.supersede(1, 1);
  a.durableThrough(1);
  t.deepEqual(a.allocate(2), [{ start: 5, count: 1 }, { start: 1, count: 1 }]);
  t.is(a.allocate(1), undefined);
  t.is(a.freeCount(), 0);
});
