import test from "ava";
import { RangeSet } from "../../lanes/range-set.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlConflictError, ControlFenceError, ControlLogRegressionError } from "../../custody/control-error.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import { foldControlLog } from "../../custody/control-state.ts";
import { checkControlLogContract } from "./control-log-contract.ts";
import { admit, createOb, eventOn, REGION, release, who } from "./control-fixtures.ts";

async function seeded() {
  const store = new InMemoryControlLog(REGION);
  const f = new ControlLogFollower(store);
  for (const b of [admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(store, f, who("ctl-a"), () => b);
  return { store, f };
}

test("the in-memory control log keeps the ControlLogStore contract", async (t) => {
  await checkControlLogContract(t, new InMemoryControlLog(REGION));
});

test("two controllers prepared on the same head: one release commits, the other conflicts and then cannot rely on the first", async (t) => {
  const { store } = await seeded();
  const a = new ControlLogFollower(store);
  const b = new ControlLogFollower(store);
  const sa = await a.refresh();
  const sb = await b.refresh();
  await store.append(eventOn(sa, release("h1", 1, 10, ["h2"]), "ctl-a"), sa.lastSeq);
  await t.throwsAsync(store.append(eventOn(sb, release("h2", 1, 10, ["h1"]), "ctl-b"), sb.lastSeq), { instanceOf: ControlConflictError });
  // Controller B re-evaluates on the new head: its release would rely on a holder that already let go.
  const err = await t.throwsAsync(commitControlEvent(store, b, who("ctl-b"), () => release("h2", 1, 10, ["h1"])), { instanceOf: ControlFenceError });
  t.is(err?.code, "release_not_covered");
  t.deepEqual(Object.keys((await b.refresh()).obligations.ob1!.released), ["h1"]);
});

test("a follower folds incrementally to the same state as a replay from scratch", async (t) => {
  const { store, f } = await seeded();
  await commitControlEvent(store, f, who("ctl-a"), () => release("h1", 1, 10, ["h2"]));
  const fresh = new ControlLogFollower(store);
  t.deepEqual(await fresh.replay(), f.state);
  t.deepEqual(foldControlLog(await store.readAll()), f.state);
});

test("a log that lost its tail after the reader saw a newer head is refused and authorizes no release", async (t) => {
  const { store, f } = await seeded();
  await commitControlEvent(store, f, who("ctl-a"), () => release("h1", 1, 10, ["h2"]));
  t.true(f.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 10)));
  store.loseTail(2);
  const err = await t.throwsAsync(f.refresh(), { instanceOf: ControlLogRegressionError });
  t.is(err?.code, "log_regression");
  t.is(f.state.lastSeq, 5, "the follower keeps the newer state it had");
  t.false(f.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 10)), "a distrusted log authorizes nothing");
  await t.throwsAsync(f.refresh(), { instanceOf: ControlLogRegressionError }, "and it stays distrusted");
});

test("a log rewritten after a lost tail (a fork) is detected at the head the reader saw", async (t) => {
  const { store, f } = await seeded();
  const before = f.state.lastSeq;
  store.loseTail(1);
  const other = new ControlLogFollower(store);
  await commitControlEvent(store, other, who("ctl-b"), () => createOb("ob-other", ["h2"]));
  t.is(await store.lastSeq(), before, "the forked log is just as long");
  const err = await t.throwsAsync(f.refresh(), { instanceOf: ControlLogRegressionError });
  t.is(err?.code, "log_fork");
  const replayer = new ControlLogFollower(store);
  await replayer.replay();
  t.is(replayer.distrusted, undefined, "a reader that never saw the lost head cannot tell");
});

test("a replay that comes back shorter than the head already seen is a regression", async (t) => {
  const { store, f } = await seeded();
  store.loseTail(3);
  t.is((await t.throwsAsync(f.replay(), { instanceOf: ControlLogRegressionError }))?.code, "log_regression");
});

test("commitControlEvent checks the transition before appending anything", async (t) => {
  const { store, f } = await seeded();
  const last = await store.lastSeq();
  await t.throwsAsync(commitControlEvent(store, f, who("ctl-a"), () => release("h1", 1, 10, ["h1"])), { instanceOf: ControlFenceError });
  t.is(await store.lastSeq(), last);
});
