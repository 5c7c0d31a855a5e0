import anyTest, { type ExecutionContext, type TestFn } from "ava";
import { jetstreamManager } from "@nats-io/jetstream";
import { commitControlEvent, commitControlEventRetrying } from "../../custody/control-commit.ts";
import { ControlLogCompactor, ControlLogNotCompactableError } from "../../custody/control-compaction.ts";
import { ControlFenceCode } from "../../custody/control-error.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { encodeControlSnapshot, isSnapshotRecord } from "../../custody/control-snapshot.ts";
import type { ControlSigner, ControlTrust } from "../../custody/control-trust.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { runCliCaptured } from "../../cli/program.ts";
import { ctrlSubject } from "../../transport/protocol/subjects.ts";
import { closeNats, connectNats, type NatsConnection } from "../../transport/nats-connection.ts";
import { ControlLogPurgeDeniedError, controlStreamName, initJetStreamControlLog, openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { admit, clock, createOb, release } from "./control-fixtures.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

/** A connection closed when the test ends (before the server stops). */
async function connect(t: ExecutionContext<NatsTestContext>, name: string): Promise<NatsConnection> {
  const nc = await connectNats({ servers: t.context.nats.url, name, maxReconnectAttempts: 0 });
  t.teardown(() => closeNats(nc).catch(() => undefined));
  return nc;
}

const signer = (id: string): ControlSigner & { publicKey: Uint8Array } => {
  const kp = generateHolderKeyPair();
  return { id, privateKey: kp.privateKey, publicKey: kp.publicKey };
};
const operator = signer("operator");
const ctl = signer("ctl-a");
const trust: ControlTrust = { operators: { operator: publicKeyFromRaw(operator.publicKey) } };
const as = (s: ControlSigner) => ({ controller: s.id, clock, signer: s });
const admitController: ControlEventBody = { type: "admit_controller", controllerId: ctl.id, publicKey: ctl.publicKey };

test.serial("compaction on JetStream: snapshot, purge below it, and a new follower reaches the old follower's state and head", async (t) => {
  const region = "snap";
  const ncOp = await connect(t, "operator");
  const { log: opStore } = await initJetStreamControlLog(ncOp, { region });
  const opFollower = new ControlLogFollower(opStore, undefined, trust);
  await commitControlEvent(opStore, opFollower, as(operator), () => admitController);

  // The controller commits on its own connection; an old follower (a holder) reads on another.
  const ctlStore = await openJetStreamControlLog(await connect(t, "ctl"), { region });
  const ctlFollower = new ControlLogFollower(ctlStore, undefined, trust);
  for (const b of [admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(ctlStore, ctlFollower, as(ctl), () => b);
  for (let i = 0; i < 10; i++) await commitControlEvent(ctlStore, ctlFollower, as(ctl), () => release(i % 2 === 0 ? "h1" : "h2", 10 * i + 1, 10 * i + 10, [i % 2 === 0 ? "h2" : "h1"]));
  const oldStore = await openJetStreamControlLog(await connect(t, "holder-old"), { region });
  const old = new ControlLogFollower(oldStore, undefined, trust);
  await old.refresh();
  t.is(old.state.lastSeq, 15);

  const compactor = new ControlLogCompactor(opStore, opFollower, operator, 10);
  const done = await compactor.compactIfDue();
  t.deepEqual(done && { snapshotSeq: done.snapshotSeq, throughSeq: done.throughSeq, purged: done.purged }, { snapshotSeq: 16, throughSeq: 15, purged: 15 });
  const jsm = await jetstreamManager(ncOp);
  const info = await jsm.streams.info(controlStreamName(region));
  t.is(info.state.first_seq, 16, "every entry below the snapshot is gone");
  t.is(info.state.messages, 1);

  // The controller goes on committing (a commit prepared before it saw the snapshot loses the
  // position and is decided again, as after any other writer's commit): it chains on from the snapshot.
  for (let i = 10; i < 14; i++) await commitControlEventRetrying(ctlStore, ctlFollower, as(ctl), () => release(i % 2 === 0 ? "h1" : "h2", 10 * i + 1, 10 * i + 10, [i % 2 === 0 ? "h2" : "h1"]));
  await oldStore.lastSeq(); // reads after this include everything committed so far
  const after = (await oldStore.readRecordsFrom(17))[0]!;
  const snapshot = (await oldStore.readRecordsFrom(16))[0]!;
  t.true(isSnapshotRecord(snapshot));
  t.is(after.event?.prevHash, isSnapshotRecord(snapshot) ? snapshot.snapshot.headHash : undefined, "the first event after the snapshot names its head");

  const fresh = new ControlLogFollower(await openJetStreamControlLog(await connect(t, "holder-new"), { region }), undefined, trust);
  const [a, b] = [await old.refresh(), await fresh.refresh()];
  t.is(a.lastSeq, 20);
  t.deepEqual(b, a, "same state, head and position");
  t.is(b.headHash, ctlFollower.state.headHash);
  t.true(fresh.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 10)));
  t.true(fresh.isReleaseAuthorized("ob1", "h2", RangeSet.of(131, 140)));
  t.is(fresh.distrusted, undefined);
  t.is(old.distrusted, undefined);
});

test.serial("a forged snapshot appended by a principal with append rights is refused, and the compactor never purges below it", async (t) => {
  const region = "snap-forged";
  const ncOp = await connect(t, "operator-f");
  const { log: opStore } = await initJetStreamControlLog(ncOp, { region });
  const opFollower = new ControlLogFollower(opStore, undefined, trust);
  await commitControlEvent(opStore, opFollower, as(operator), () => admitController);
  const ctlStore = await openJetStreamControlLog(await connect(t, "ctl-f"), { region });
  const ctlFollower = new ControlLogFollower(ctlStore, undefined, trust);
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"]), release("h1", 1, 10, ["h2"])]) await commitControlEvent(ctlStore, ctlFollower, as(ctl), () => b);
  const s = await ctlFollower.refresh();

  // The admitted controller (it may append) commits a snapshot of a state where h2 released everything.
  const lie = { ...s, obligations: { ob1: { ...s.obligations["ob1"]!, released: { ...s.obligations["ob1"]!.released, h2: RangeSet.of(1, 1_000_000) } } } };
  const seq = await ctlStore.appendSnapshot(encodeControlSnapshot(region, lie), s.lastSeq, ctl);
  const readerStore = await openJetStreamControlLog(await connect(t, "reader-f"), { region });
  const reader = new ControlLogFollower(readerStore, undefined, trust);
  const folded = await reader.refresh();
  t.is(folded.lastSeq, seq);
  t.is(folded.rejected.at(-1)?.code, ControlFenceCode.signer_not_allowed);
  t.false(reader.isReleaseAuthorized("ob1", "h2", RangeSet.of(1, 10)), "the forged frontier authorizes nothing");
  t.true(reader.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 10)));
  t.is(reader.distrusted, undefined);

  // A compaction signed by a non-operator key is refused before the purge; an operator's then succeeds above the forged one.
  await t.throwsAsync(new ControlLogCompactor(opStore, opFollower, ctl, 1).compact(), { instanceOf: ControlLogNotCompactableError });
  const jsm = await jetstreamManager(ncOp);
  t.is((await jsm.streams.info(controlStreamName(region))).state.first_seq, 1, "nothing was purged");
  const done = await new ControlLogCompactor(opStore, opFollower, operator, 1).compact();
  const fresh = new ControlLogFollower(await openJetStreamControlLog(await connect(t, "reader-g"), { region }), undefined, trust);
  await fresh.refresh();
  await readerStore.lastSeq();
  await reader.refresh();
  t.is(fresh.state.lastSeq, done.snapshotSeq);
  t.deepEqual(fresh.state, reader.state);
  t.false(fresh.isReleaseAuthorized("ob1", "h2", RangeSet.of(1, 10)));
});

test.serial("a control stream created to deny purges refuses a snapshot before committing it", async (t) => {
  const region = "snap-legacy";
  const nc = await connect(t, "legacy");
  const jsm = await jetstreamManager(nc);
  const name = controlStreamName(region);
  await jsm.streams.add({ name, subjects: [ctrlSubject(region)], deny_delete: true, deny_purge: true });
  const store = await openJetStreamControlLog(nc, { region });
  const f = new ControlLogFollower(store, undefined, trust);
  await commitControlEvent(store, f, as(operator), () => admitController);
  await t.throwsAsync(new ControlLogCompactor(store, f, operator, 1).compact(), { instanceOf: ControlLogPurgeDeniedError });
  t.is(await store.lastSeq(), 1, "no snapshot was committed");
});

test.serial("`custody log compact` snapshots the log and purges below the snapshot", async (t) => {
  const region = "snap-cli";
  const nc = await connect(t, "cli-setup");
  const { log: store } = await initJetStreamControlLog(nc, { region });
  const f = new ControlLogFollower(store);
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"]), release("h1", 1, 10, ["h2"])]) await commitControlEvent(store, f, { controller: "ctl-a", clock }, () => b);
  const r = await runCliCaptured(["log", "compact", "--region", region, "--server", t.context.nats.url, "--json"]);
  t.is(r.code, 0, r.stderr);
  t.like(JSON.parse(r.stdout.trim()), { region, snapshotSeq: 5, throughSeq: 4, purged: 4 });
  const fresh = new ControlLogFollower(await openJetStreamControlLog(await connect(t, "cli-reader"), { region }));
  await store.lastSeq();
  t.deepEqual(await fresh.refresh(), await f.refresh());
});
