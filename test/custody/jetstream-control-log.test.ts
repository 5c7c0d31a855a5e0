import anyTest, { type TestFn } from "ava";
import { jetstreamManager } from "@nats-io/jetstream";
import { RangeSet } from "../../lanes/range-set.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlConflictError, ControlFenceError, ControlLogRegressionError } from "../../custody/control-error.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { closeNats, connectNats, type NatsConnection } from "../../transport/nats-connection.ts";
import { ControlLogPlacementError, initJetStreamControlLog, openJetStreamControlLog, type JetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { checkControlLogContract } from "./control-log-contract.ts";
import { admit, createOb, eventOn, release, who } from "./control-fixtures.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const open = new Set<NatsConnection>();
async function connect(t: { context: NatsTestContext }, name: string): Promise<NatsConnection> {
  const nc = await connectNats({ servers: t.context.nats.url, name, maxReconnectAttempts: 0 });
  open.add(nc);
  return nc;
}
async function disconnect(nc: NatsConnection): Promise<void> {
  open.delete(nc);
  await closeNats(nc);
}
test.after.always(async () => {
  for (const nc of open) await closeNats(nc).catch(() => undefined);
});

const SETUP: ControlEventBody[] = [admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2"])];

async function seeded(t: { context: NatsTestContext }, region: string): Promise<{ nc: NatsConnection; store: JetStreamControlLog; f: ControlLogFollower }> {
  const nc = await connect(t, `ctl-${region}`);
  const { log: store } = await initJetStreamControlLog(nc, { region });
  const f = new ControlLogFollower(store);
  for (const b of SETUP) await commitControlEvent(store, f, who("ctl-a"), () => b);
  return { nc, store, f };
}

// Tests share one server; each uses its own region (its own stream). Serial keeps the restart test alone.

test.serial("the JetStream control log keeps the ControlLogStore contract", async (t) => {
  const nc = await connect(t, "contract");
  await checkControlLogContract(t, (await initJetStreamControlLog(nc, { region: "contract" })).log);
  await disconnect(nc);
});

test.serial("two controllers race conflicting release events: exactly one commits, the other gets a typed conflict", async (t) => {
  const { nc } = await seeded(t, "race");
  const ncB = await connect(t, "ctl-b");
  const storeA = await openJetStreamControlLog(nc, { region: "race" });
  const storeB = await openJetStreamControlLog(ncB, { region: "race" });
  const a = new ControlLogFollower(storeA);
  const b = new ControlLogFollower(storeB);
  for (let round = 0; round < 5; round++) {
    const first = 1 + round * 10;
    const [sa, sb] = await Promise.all([a.refresh(), b.refresh()]);
    t.is(sa.headHash, sb.headHash, "both controllers prepare on the same head");
    // Each release is valid alone; together they would leave nobody responsible.
    const results = await Promise.allSettled([
      storeA.append(eventOn(sa, release("h1", first, first + 9, ["h2"]), "ctl-a"), sa.lastSeq),
      storeB.append(eventOn(sb, release("h2", first, first + 9, ["h1"]), "ctl-b"), sb.lastSeq),
    ]);
    t.is(results.filter((r) => r.status === "fulfilled").length, 1, `round ${round}: exactly one commits`);
    const lost = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    t.true(lost?.reason instanceof ControlConflictError, `round ${round}: the loser gets ControlConflictError`);
  }
  // The loser of the last round re-evaluates on the new head and finds its release is no longer covered.
  const s = await b.refresh();
  const rel = s.obligations.ob1!.released;
  const releasedBoth = (rel.h1 ?? RangeSet.EMPTY).intersect(rel.h2 ?? RangeSet.EMPTY);
  t.true(releasedBoth.isEmpty, "no range was released by both holders");
  t.is((rel.h1 ?? RangeSet.EMPTY).count + (rel.h2 ?? RangeSet.EMPTY).count, 50);
  const [loser, winner] = rel.h1?.has(41) ? ["h2", "h1"] : ["h1", "h2"];
  const err = await t.throwsAsync(commitControlEvent(storeB, b, who("ctl-b"), () => release(loser!, 41, 50, [winner!])), { instanceOf: ControlFenceError });
  t.is(err?.code, "release_not_covered");
  t.deepEqual(s.rejected, [], "no refused event reached the log");
  await disconnect(ncB);
  await disconnect(nc);
});

test.serial("replaying the stream from scratch reproduces the same folded state", async (t) => {
  const { nc, store, f } = await seeded(t, "replay");
  await commitControlEvent(store, f, who("ctl-a"), () => ({ type: "prepare_transfer", transferId: "t1", obligationId: "ob1", fromHolder: "h1", toHolder: "relay", ranges: RangeSet.of(1, 100) }));
  await commitControlEvent(store, f, who("ctl-a"), () => ({ type: "activate_replacement", transferId: "t1" }));
  await commitControlEvent(store, f, who("ctl-a"), () => release("h1", 1, 100, ["relay"]));
  await commitControlEvent(store, f, who("ctl-a"), () => ({ type: "policy_change", topologyEpoch: 2, policyGeneration: 3, reason: "eu-west joins" }));
  const nc2 = await connect(t, "replayer");
  const fresh = new ControlLogFollower(await openJetStreamControlLog(nc2, { region: "replay" }));
  t.deepEqual(await fresh.replay(), f.state);
  t.is(f.state.lastSeq, 8);
  t.true(fresh.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 100)));
  await disconnect(nc2);
  await disconnect(nc);
});

test.serial("a clean nats-server restart loses no committed control event (file storage)", async (t) => {
  const { nc, store, f } = await seeded(t, "restart");
  for (let i = 0; i < 10; i++) await commitControlEvent(store, f, who("ctl-a"), () => release("h1", 1 + i * 5, 5 + i * 5, ["h2"]));
  const seen = f.state;
  await disconnect(nc);
  await t.context.nats.restart();
  const nc2 = await connect(t, "after-restart");
  const store2 = await openJetStreamControlLog(nc2, { region: "restart" });
  const fresh = new ControlLogFollower(store2);
  t.deepEqual(await fresh.replay(), seen, "every committed event is back, in order, with the same hashes");
  // The follower that saw the pre-restart head accepts the log (no regression) and can keep committing.
  const same = new ControlLogFollower(store2);
  await same.replay();
  await commitControlEvent(store2, same, who("ctl-a"), () => release("h1", 51, 60, ["h2"]));
  t.is(same.state.lastSeq, seen.lastSeq + 1);
  await disconnect(nc2);
});

test.serial("a log that lost its tail after a reader saw a newer head is refused, and a rewritten tail is a fork", async (t) => {
  const { nc, store, f } = await seeded(t, "lost");
  await commitControlEvent(store, f, who("ctl-a"), () => release("h1", 1, 10, ["h2"]));
  const g = new ControlLogFollower(store);
  await g.refresh();
  const kept = (await store.readAll()).slice(0, 3);
  // Model a server that acknowledged events it never made durable: the stream comes back shorter.
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(store.streamName);
  const { log: rebuilt } = await initJetStreamControlLog(nc, { region: "lost" });
  for (const [i, e] of kept.entries()) await rebuilt.append(e.event, i);
  const err = await t.throwsAsync(f.refresh(), { instanceOf: ControlLogRegressionError });
  t.is(err?.code, "log_regression");
  t.false(f.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 10)), "no release is authorized from the older log");
  // Now a different history grows back to the same length: the reader that saw the old head calls it a fork.
  const other = new ControlLogFollower(rebuilt);
  await commitControlEvent(rebuilt, other, who("ctl-b"), () => createOb("ob1", ["h2"]));
  await commitControlEvent(rebuilt, other, who("ctl-b"), () => createOb("ob9", ["h2"]));
  t.is(await rebuilt.lastSeq(), g.state.lastSeq);
  t.is((await t.throwsAsync(g.refresh(), { instanceOf: ControlLogRegressionError }))?.code, "log_fork");
  await disconnect(nc);
});

test.serial("after a SIGKILL restart a reader either sees every acknowledged event or reports a regression", async (t) => {
  const { nc, store, f } = await seeded(t, "sigkill");
  for (let i = 0; i < 5; i++) await commitControlEvent(store, f, who("ctl-a"), () => release("h1", 1 + i * 5, 5 + i * 5, ["h2"]));
  await disconnect(nc);
  await t.context.nats.restart({ kill: true });
  const nc2 = await connect(t, "after-kill");
  // The controller persisted the head it saw before the kill. JetStream fsyncs on a timer, so the
  // tail may be gone; what must never happen is a silently shorter or different log.
  const { lastSeq, headHash } = f.state;
  const reader = new ControlLogFollower(await openJetStreamControlLog(nc2, { region: "sigkill" }), f.state);
  const outcome = await reader.refresh().then(
    (s) => ({ ok: true as const, s }),
    (e: unknown) => ({ ok: false as const, e }),
  );
  if (outcome.ok) {
    t.is(outcome.s.lastSeq, lastSeq);
    t.is(outcome.s.headHash, headHash);
  } else {
    t.true(outcome.e instanceof ControlLogRegressionError);
    t.log(`SIGKILL lost acknowledged events: ${(outcome.e as Error).message}`);
  }
  await disconnect(nc2);
});

test.serial("one standing tail serves a follower's rounds: 200 refreshes create no consumer, and entries another controller commits arrive", async (t) => {
  const { nc, store, f } = await seeded(t, "tail");
  const spy = await connect(t, "api-spy");
  const calls: string[] = [];
  spy.subscribe("$JS.API.>", {
    callback: (_e, m) => {
      calls.push(m.subject);
    },
  });
  await spy.flush();
  await f.refresh(); // the tail is running from here on
  await spy.flush();
  t.deepEqual(calls.filter((s) => s.includes(".CONSUMER.")), [], "reading the log creates no consumer: entries are read by sequence");
  calls.length = 0;
  const before = store.apiRequests;
  const t0 = Date.now();
  for (let i = 0; i < 200; i++) await f.refresh();
  t.log(`200 refreshes: ${Date.now() - t0} ms`);
  await spy.flush();
  const creates = calls.filter((s) => s.includes(".CONSUMER.")).length;
  t.is(creates, 0, `no consumer created during 200 refreshes (API calls seen: ${calls.length})`);
  t.true(store.apiRequests - before <= 2, `at most a stream-info check per 2 s (${store.apiRequests - before} requests)`);

  // Another controller commits on its own connection: the tail delivers it without a new read.
  const ncB = await connect(t, "ctl-other");
  const storeB = await openJetStreamControlLog(ncB, { region: "tail" });
  const g = new ControlLogFollower(storeB);
  const { seq } = await commitControlEvent(storeB, g, who("ctl-b"), () => release("h1", 1, 5, ["h2"]));
  const until = Date.now() + 5_000;
  // Each round yields to I/O (a round served by the tail alone resolves without any).
  while (f.state.lastSeq < seq && Date.now() < until) {
    await f.refresh();
    await new Promise((r) => setImmediate(r));
  }
  t.log(`arrived after ${Date.now() - (until - 5_000)} ms`);
  t.is(f.state.lastSeq, seq);
  t.is(f.state.headHash, g.state.headHash);
  // A commit prepared on a head the other controller moved past conflicts; the next read is current.
  await commitControlEvent(storeB, g, who("ctl-b"), () => release("h1", 6, 10, ["h2"]));
  const stale = f.state;
  await t.throwsAsync(store.append(eventOn(stale, release("h2", 11, 20, ["h1"]), "ctl-a"), stale.lastSeq), { instanceOf: ControlConflictError });
  t.is((await f.refresh()).lastSeq, g.state.lastSeq, "after a conflict the next refresh asks the stream and waits for the entry");
  await store.close();
  await storeB.close();
  await disconnect(ncB);
  await disconnect(spy);
  await disconnect(nc);
});

test.serial("an existing control stream is never re-replicated or moved by a bootstrap: asked for other replicas or another cluster, the bootstrap says so and changes nothing", async (t) => {
  const nc = await connect(t, "placement");
  const { log } = await initJetStreamControlLog(nc, { region: "placement" });
  await log.close();
  const refused = await t.throwsAsync(initJetStreamControlLog(nc, { region: "placement", replicas: 3, placementCluster: "control-placement" }), { instanceOf: ControlLogPlacementError });
  t.is(refused.code, "control_log_placement");
  t.like(refused.detail, { want: { replicas: 3, cluster: "control-placement" }, have: { replicas: 1 } });
  const again = await initJetStreamControlLog(nc, { region: "placement" });
  t.false(again.created, "without asking for a placement, the existing stream is opened");
  t.is((await (await jetstreamManager(nc)).streams.info("CUSTODY_CTRL_placement")).config.num_replicas, 1);
  await again.log.close();
  await disconnect(nc);
});
