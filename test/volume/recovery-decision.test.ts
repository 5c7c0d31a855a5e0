import test from "ava";
import fc from "fast-check";
import { BadRequestError, decideRecovery, RecoveryDecision } from "../../volume/index.ts";

test("the decision follows the documented rule on its boundary cases", (t) => {
  const d = (R: number, S: number, H: number, dirtyMapSince?: number) =>
    decideRecovery({ replicaFlushedLsn: R, walStart: S, walHead: H, ...(dirtyMapSince !== undefined ? { dirtyMapSince } : {}) }).decision;
  t.is(d(100, 50, 100), RecoveryDecision.NoRecovery);
  t.is(d(49, 50, 100), RecoveryDecision.CatchUp); // needs 50..100, all retained
  t.is(d(99, 50, 100), RecoveryDecision.CatchUp);
  t.is(d(48, 50, 100), RecoveryDecision.DeltaRebuild);
  t.is(d(48, 50, 100, 40), RecoveryDecision.DeltaRebuild);
  t.is(d(48, 50, 100, 49), RecoveryDecision.FullRebuild); // dirty map starts after the peer's base
  t.is(d(0, 50, 100), RecoveryDecision.FullRebuild);
  t.is(d(0, 1, 100), RecoveryDecision.CatchUp); // the whole history is still in the WAL
  t.is(d(101, 50, 100), RecoveryDecision.FullRebuild); // peer ahead of the primary
  t.is(d(0, 1, 0), RecoveryDecision.NoRecovery);
});

test("impossible inputs are rejected with BadRequestError", (t) => {
  t.throws(() => decideRecovery({ replicaFlushedLsn: -1, walStart: 1, walHead: 5 }), { instanceOf: BadRequestError });
  t.throws(() => decideRecovery({ replicaFlushedLsn: 1, walStart: 7, walHead: 5 }), { instanceOf: BadRequestError });
  t.throws(() => decideRecovery({ replicaFlushedLsn: 1.5, walStart: 1, walHead: 5 }), { instanceOf: BadRequestError });
  t.throws(() => decideRecovery({ replicaFlushedLsn: 1, walStart: 0, walHead: 5 }), { instanceOf: BadRequestError });
});

test("catch_up is chosen exactly when every missing record is still in the WAL", (t) => {
  fc.assert(
    fc.property(fc.nat(1000), fc.nat(1000), fc.nat(1000), (a, b, r) => {
      const H = Math.max(a, b);
      const S = Math.min(a, b) + 1;
      const { decision } = decideRecovery({ replicaFlushedLsn: r, walStart: S, walHead: H });
      const missingInWal = r < H && r + 1 >= S;
      return (decision === RecoveryDecision.CatchUp) === missingInWal;
    }),
  );
  t.pass();
});
