import anyTest, { type TestFn } from "ava";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlFenceError } from "../../custody/control-error.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { applyControlEvent, releasedRanges } from "../../custody/control-state.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { admit, createOb, eventOn, who } from "./control-fixtures.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Rule (issue #46, item 7): `release_to_base` of ranges under a PITR pin or a recovery hold is
// refused `range_held`, as `release_ranges` is. The existing tests held only `release_ranges`, so
// a fold that forgot the hold check on the base path passed them all. Here the release goes the
// way a controller's does: committed to a real JetStream control log, and folded by a follower.

/** h1 releasing `first`-`last` of vol1/l0 to its own base through 60 (what image-custody commits). */
const toBase = (first: number, last: number): ControlEventBody => ({
  type: "release_to_base",
  obligationId: "ob1",
  holderId: "h1",
  ranges: RangeSet.of(first, last),
  baseHolder: "h1",
  snapshotId: "base-60",
  baseThroughSeq: 60,
});

const pin: ControlEventBody = { type: "hold_ranges", holdId: "pin-a", kind: "pitr_pin", volume: "vol1", lane: "l0", ranges: RangeSet.of(5, 8), holders: ["h1"], untilMs: 0, by: "operator" };
const recovery: ControlEventBody = { type: "hold_ranges", holdId: "rec-1", kind: "recovery", volume: "vol1", lane: "l0", ranges: RangeSet.of(20, 30), holders: [], untilMs: 0, by: "custody recover" };

test.serial("range_held: release_to_base under a PITR pin or a recovery hold is refused at commit and by every follower's fold, until the hold ends", async (t) => {
  const nc = await connectNats({ servers: t.context.nats.url, name: "ctl-holds", maxReconnectAttempts: 0 });
  try {
    const { log: store } = await initJetStreamControlLog(nc, { region: "rb" });
    const ctl = new ControlLogFollower(store);
    for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"]), pin, recovery]) await commitControlEvent(store, ctl, who("ctl-a"), () => b);

    // A compliant controller's commit checks the transition first: nothing is appended.
    for (const [body, holdId] of [[toBase(1, 10), "pin-a"], [toBase(15, 25), "rec-1"]] as const) {
      const before = await store.lastSeq();
      const err = await t.throwsAsync(commitControlEvent(store, ctl, who("ctl-a"), () => body), { instanceOf: ControlFenceError });
      t.is(err?.code, "range_held", `release_to_base through ${holdId} refused`);
      t.is(err?.detail["holdId"], holdId);
      t.is(await store.lastSeq(), before, "nothing was appended");
    }

    // A controller that ignored the holds appends anyway: every follower's fold refuses it.
    const appended: number[] = [];
    for (const body of [toBase(1, 10), toBase(15, 25)]) {
      const s = await ctl.refresh();
      appended.push(await store.append(eventOn(s, body), s.lastSeq));
    }
    const reader = new ControlLogFollower(store);
    for (const f of [ctl, reader]) {
      const s = await f.refresh();
      t.deepEqual(
        s.rejected.filter((r) => appended.includes(r.seq)).map((r) => r.code),
        ["range_held", "range_held"],
        "both releases are refused by the fold",
      );
      t.true(releasedRanges(s, "ob1", "h1").isEmpty, "nothing was released at h1");
      t.false(f.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 4)), "not even the unheld part of a refused release");
    }

    // Outside every hold the same base releases; once the holds end, so does the rest.
    await commitControlEvent(store, ctl, who("ctl-a"), () => toBase(1, 4));
    t.is(releasedRanges(ctl.state, "ob1", "h1").toString(), "1-4");
    await commitControlEvent(store, ctl, who("ctl-a"), () => ({ type: "end_hold", holdId: "pin-a", reason: "done" }));
    t.throws(() => applyControlEvent(ctl.state, eventOn(ctl.state, toBase(15, 25))), { instanceOf: ControlFenceError, message: /rec-1/ }, "the recovery hold still stands");
    await commitControlEvent(store, ctl, who("ctl-a"), () => ({ type: "end_hold", holdId: "rec-1", reason: "recovery finished" }));
    await commitControlEvent(store, ctl, who("ctl-a"), () => toBase(5, 30));
    t.is(releasedRanges((await reader.refresh()), "ob1", "h1").toString(), "1-30");
  } finally {
    await closeNats(nc);
  }
});
