/**
 * A copy target that keeps being sent the same sequences without claiming them (a full arena, a
 * holder that drops offers) is passed over after three retries past the grace, so the gap goes
 * elsewhere or brings in a standby (sim seed 998428).
 */
import test from "ava";
import { CopyTargets } from "../../actors/controller/copy-targets.ts";
import { RangeSet } from "../../lanes/range-set.ts";

const K = "standby-h1/l0";

test("regression sim seed 998428: a target re-sent the same unclaimed units is passed over on the third retry past the grace, for the window", (t) => {
  const c = new CopyTargets(1_000, 2_000);
  c.offered(K, RangeSet.of(350, 356), 0);
  t.false(c.retrying(K, RangeSet.of(350, 370), 500), "inside the grace a retry is normal (receipts take time)");
  c.offered(K, RangeSet.of(350, 370), 600);
  t.false(c.retrying(K, RangeSet.of(350, 370), 1_100), "strike 1: the grace runs from the first offer, not the latest");
  c.offered(K, RangeSet.of(350, 370), 1_200);
  t.false(c.retrying(K, RangeSet.of(350, 375), 1_500), "strike 2");
  c.offered(K, RangeSet.of(350, 375), 1_600);
  t.true(c.retrying(K, RangeSet.of(350, 380), 2_000), "strike 3: not taking copies");
  t.true(c.passedOver(K, 2_000));
  t.true(c.passedOver(K, 3_999));
  t.false(c.passedOver(K, 4_000), "the window ends: it may be tried again");
  t.false(c.retrying(K, RangeSet.of(350, 380), 4_000), "and starts with a clean record");
});

test("a target that claims what it was sent is never struck: the next copy is of other sequences", (t) => {
  const c = new CopyTargets(1_000, 2_000);
  for (let i = 0; i < 10; i++) {
    const r = RangeSet.of(10 * i + 1, 10 * i + 10);
    t.false(c.retrying(K, r, 1_000 * i));
    c.offered(K, r, 1_000 * i + 100);
  }
  t.false(c.passedOver(K, 10_000));
});

test("targets are kept apart by target and lane, and an empty offer records nothing", (t) => {
  const c = new CopyTargets(0, 5_000);
  c.offered("a/l0", RangeSet.of(1, 5), 0);
  c.offered("b/l0", RangeSet.EMPTY, 0);
  for (let i = 1; i <= 2; i++) t.false(c.retrying("a/l0", RangeSet.of(1, 5), i));
  t.false(c.retrying("b/l0", RangeSet.of(1, 5), 3), "b was never offered anything");
  t.true(c.retrying("a/l0", RangeSet.of(1, 5), 4));
  t.false(c.passedOver("a/l1", 5));
  t.false(c.passedOver("b/l0", 5));
});
