import test from "ava";
import fc from "fast-check";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogNotCompactableError, ControlLogCompactor } from "../../custody/control-compaction.ts";
import { ControlFenceCode, ControlLogRegressionCode, ControlLogRegressionError } from "../../custody/control-error.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import { decodeControlState, encodeControlSnapshot, encodeControlState, foldSnapshotRecord, hashControlState, isSnapshotRecord, snapshotRecordFromBytes } from "../../custody/control-snapshot.ts";
import { foldControlLog, type ControlState } from "../../custody/control-state.ts";
import { signEntryHash, type ControlSigner, type ControlTrust } from "../../custody/control-trust.ts";
import { hashControlEventBytes } from "../../custody/control-event.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { checkControlLogHead } from "../../actors/runtime/control-log-head.ts";
import { admit, clock, createOb, eventOn, release, REGION } from "./control-fixtures.ts";

const signer = (id: string): ControlSigner & { publicKey: Uint8Array } => {
  const kp = generateHolderKeyPair();
  return { id, privateKey: kp.privateKey, publicKey: kp.publicKey };
};
const operator = signer("operator");
const ctl = signer("ctl-a");
const trust: ControlTrust = { operators: { operator: publicKeyFromRaw(operator.publicKey) } };
const as = (s: ControlSigner) => ({ controller: s.id, clock, signer: s });
const admitController: ControlEventBody = { type: "admit_controller", controllerId: ctl.id, publicKey: ctl.publicKey };

/** Appends `body` prepared on the follower's head, whether or not the fold will accept it (refused events are committed too). */
async function appendRaw(store: InMemoryControlLog, f: ControlLogFollower, body: ControlEventBody, by?: ControlSigner): Promise<void> {
  const s = await f.refresh();
  await store.append(eventOn(s, body, by?.id ?? "ctl-a"), s.lastSeq, by);
}

/** A signed log: the operator admits ctl-a; ctl-a admits h1, h2, relay and creates ob1; h1 releases 1-10 relying on h2. */
async function signedLog(): Promise<{ store: InMemoryControlLog; f: ControlLogFollower }> {
  const store = new InMemoryControlLog(REGION);
  const f = new ControlLogFollower(store, undefined, trust);
  await commitControlEvent(store, f, as(operator), () => admitController);
  for (const b of [admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2"]), release("h1", 1, 10, ["h2"])]) await commitControlEvent(store, f, as(ctl), () => b);
  return { store, f };
}

test("a state encodes canonically and decodes to an equal state", async (t) => {
  const { f } = await signedLog();
  const s = f.state;
  const back = decodeControlState(encodeControlState(s));
  t.deepEqual(back, s);
  t.true(back.obligations["ob1"]!.released["h1"]!.equals(RangeSet.of(1, 10)));
  // Key order does not matter: the same state built in another order has the same bytes.
  const reordered: ControlState = { ...Object.fromEntries(Object.entries(s).reverse()), holders: Object.fromEntries(Object.entries(s.holders).reverse()) } as ControlState;
  t.is(hashControlState(reordered), hashControlState(s));
});

test("bytes that are not a state are refused as snapshot_mismatch", (t) => {
  const err = t.throws(() => decodeControlState(new Uint8Array([0x81, 0xa1, 0x61, 0x01])), { instanceOf: ControlLogRegressionError });
  t.is(err?.code, ControlLogRegressionCode.snapshot_mismatch);
});

test("a new reader starts from the operator's snapshot and reaches the old follower's state and head", async (t) => {
  const { store, f } = await signedLog();
  const early = foldControlLog((await store.readRecordsFrom(1)).slice(0, 3), undefined, trust);
  const c = new ControlLogCompactor(store, f, operator, 3);
  const done = await c.compactIfDue();
  t.truthy(done);
  t.is(done!.throughSeq, 6);
  t.is(done!.snapshotSeq, 7);
  t.is(done!.purged, 6);
  const first = (await store.readRecordsFrom(1))[0]!;
  t.true(isSnapshotRecord(first), "the log now starts at the snapshot");
  t.is(await c.compactIfDue(), undefined, "not due again until 3 more entries");
  // The chain anchors at the snapshot: the next event names the head at 6.
  const headAt6 = f.state.headHash;
  await commitControlEvent(store, f, as(ctl), () => release("h2", 11, 20, ["h1"]));
  const next = (await store.readRecordsFrom(8))[0]!;
  t.is(next.event?.prevHash, headAt6);
  const fresh = new ControlLogFollower(store, undefined, trust);
  await fresh.refresh();
  t.deepEqual(fresh.state, f.state);
  t.is(fresh.distrusted, undefined);
  t.true(fresh.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 10)));
  // A follower that fell behind the purge (it saw 3, the log now starts at 7) folds on from the snapshot.
  const behind = new ControlLogFollower(store, early, trust);
  t.is(behind.state.lastSeq, 3);
  await behind.refresh();
  t.deepEqual(behind.state, f.state);
  const replayed = new ControlLogFollower(store, early, trust);
  await replayed.replay();
  t.deepEqual(replayed.state, f.state);
});

test("fold from a snapshot equals fold from genesis, for random event sequences and snapshot points", async (t) => {
  const holders = ["h1", "h2", "relay"];
  const h = fc.constantFrom(...holders);
  const body: fc.Arbitrary<ControlEventBody> = fc.oneof(
    { weight: 1, arbitrary: h.map((id) => admit(id)) },
    fc.tuple(fc.constantFrom("ob1", "ob2"), fc.subarray(holders, { minLength: 1 })).map(([ob, hs]) => createOb(ob, hs)),
    {
      weight: 4,
      arbitrary: fc.tuple(h, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 10 }), h, fc.constantFrom("ob1", "ob1", "ob2")).map(([id, a, n, by, ob]) => release(id, a, a + n, [by], ob)),
    },
    fc.tuple(h, h, fc.integer({ min: 1, max: 40 }), fc.nat(5)).map(([from, to, a, i]): ControlEventBody => ({ type: "prepare_transfer", transferId: `t${i}`, obligationId: "ob1", fromHolder: from, toHolder: to, ranges: RangeSet.of(a, a + 3) })),
    fc.nat(5).map((i): ControlEventBody => ({ type: "activate_replacement", transferId: `t${i}` })),
    h.map((id): ControlEventBody => ({ type: "declare_failure", scope: "holder", domain: `aws/us-east-1/az-${id}`, holderIds: [id] })),
    fc.nat(3).map((g): ControlEventBody => ({ type: "policy_change", topologyEpoch: 1, policyGeneration: 2 + g, reason: "p" })),
  );
  let withReleases = 0;
  let withRefusals = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(body, { minLength: 1, maxLength: 24 }), fc.nat(), fc.nat(), async (random, cut1, cut2) => {
      // A start most runs share (holders and an obligation), so the random events act on something.
      const bodies = [admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2"]), ...random];
      const points = new Set([cut1 % (bodies.length + 1), cut2 % (bodies.length + 1)]);
      // The same events, once in a log without snapshots, once in one compacted at up to two points.
      const plain = new InMemoryControlLog(REGION);
      const pf = new ControlLogFollower(plain);
      const log = new InMemoryControlLog(REGION);
      const old = new ControlLogFollower(log);
      const c = new ControlLogCompactor(log, new ControlLogFollower(log));
      for (let i = 0; i <= bodies.length; i++) {
        if (points.has(i)) await c.compact();
        if (i === bodies.length) break;
        await appendRaw(plain, pf, bodies[i]!);
        await appendRaw(log, old, bodies[i]!);
      }
      const [genesis, fromOld] = [await pf.refresh(), await old.refresh()];
      const fromSnapshot = await new ControlLogFollower(log).refresh();
      t.deepEqual(fromSnapshot, fromOld);
      // The snapshot is transparent to the chain and to the content: only positions differ.
      const content = (s: ControlState) => ({ ...s, lastSeq: 0, lastEntryHash: undefined, rejected: s.rejected.map((r) => r.code) });
      t.is(fromSnapshot.headHash, genesis.headHash);
      t.deepEqual(content(fromSnapshot), content(genesis));
      if (Object.values(fromSnapshot.obligations).some((o) => Object.keys(o.released).length > 0)) withReleases++;
      if (fromSnapshot.rejected.length > 0) withRefusals++;
    }),
    { numRuns: 100 },
  );
  // The sequences reach real states: some commit releases, some have refused events in the snapshot.
  t.true(withReleases > 0, `runs with releases: ${withReleases}`);
  t.true(withRefusals > 0, `runs with refusals: ${withRefusals}`);
  t.log(`of 100 runs: ${withReleases} with releases, ${withRefusals} with refused events`);
});

test("a snapshot from an admitted controller is skipped by a follower that has the entries, and refused by one that must start from it", async (t) => {
  const { store, f } = await signedLog();
  const s = await f.refresh();
  const forged = encodeControlSnapshot(REGION, { ...s, holders: {} });
  const seq = await store.appendSnapshot(forged, s.lastSeq, ctl);
  const after = await f.refresh();
  t.is(f.distrusted, undefined, "junk from a principal with append rights stops nobody");
  t.deepEqual(after.rejected.at(-1), { seq, code: ControlFenceCode.signer_not_allowed, message: `snapshot ${seq} is signed by ctl-a, not an operator (only an operator may commit a snapshot)` });
  t.deepEqual(after.holders, s.holders, "the forged state changed nothing");
  // The compactor never purges below it; if someone did, a new reader refuses to start there.
  await store.purgeBelow(seq);
  const fresh = new ControlLogFollower(store, undefined, trust);
  const err = await t.throwsAsync(fresh.refresh(), { instanceOf: ControlLogRegressionError });
  t.is(err?.code, ControlLogRegressionCode.snapshot_forged);
  t.truthy(fresh.distrusted);
});

test("the compactor refuses to purge below a snapshot its readers would skip", async (t) => {
  const { store, f } = await signedLog();
  const err = await t.throwsAsync(new ControlLogCompactor(store, f, ctl, 1).compact(), { instanceOf: ControlLogNotCompactableError });
  t.regex(err!.message, /refuse the snapshot at 7/);
  t.is((await store.readRecordsFrom(1))[0]!.seq, 1, "nothing was purged");
});

test("an operator-signed snapshot that differs from the reader's own fold is snapshot_mismatch", async (t) => {
  const { store, f } = await signedLog();
  const s = await f.refresh();
  const lie = { ...s, obligations: { ...s.obligations, ob1: { ...s.obligations["ob1"]!, released: { h1: RangeSet.of(1, 1000) } } } };
  await store.appendSnapshot(encodeControlSnapshot(REGION, lie), s.lastSeq, operator);
  const err = await t.throwsAsync(f.refresh(), { instanceOf: ControlLogRegressionError });
  t.is(err?.code, ControlLogRegressionCode.snapshot_mismatch);
  t.false(f.isReleaseAuthorized("ob1", "h1", RangeSet.of(1, 10)), "a distrusted follower authorizes nothing");
});

test("a snapshot whose state does not hash to what it claims, or names another position, is snapshot_mismatch", async (t) => {
  const { f } = await signedLog();
  const s = await f.refresh();
  const at = s.lastSeq + 1;
  const record = (bytes: Uint8Array, seq = at) => snapshotRecordFromBytes(seq, bytes, signEntryHash(hashControlEventBytes(bytes), seq, operator));
  const good = encodeControlSnapshot(REGION, s);
  const tampered = good.slice();
  tampered[tampered.length - 5] = tampered[tampered.length - 5]! ^ 0xff; // inside the state bytes
  for (const r of [record(tampered), record(good, at + 3)]) {
    const err = t.throws(() => foldSnapshotRecord({ ...s, lastSeq: 0 }, r, trust), { instanceOf: ControlLogRegressionError });
    t.is(err?.code, ControlLogRegressionCode.snapshot_mismatch);
  }
  // Replayed at another position, the operator's signature no longer verifies: forged.
  const replayed = snapshotRecordFromBytes(at + 3, good, signEntryHash(hashControlEventBytes(good), at, operator));
  t.is(t.throws(() => foldSnapshotRecord({ ...s, lastSeq: 0 }, replayed, trust), { instanceOf: ControlLogRegressionError })?.code, ControlLogRegressionCode.snapshot_forged);
});

test("a snapshot behind what the reader already folded is snapshot_regressed", async (t) => {
  const { store, f } = await signedLog();
  const old = await f.refresh();
  const oldSnapshot = encodeControlSnapshot(REGION, old);
  await commitControlEvent(store, f, as(ctl), () => release("h2", 11, 20, ["h1"]));
  const s = await f.refresh();
  // The operator's snapshot of an older state, signed for the position after the newer head.
  const at = s.lastSeq + 1;
  const stale = snapshotRecordFromBytes(at, oldSnapshot, signEntryHash(hashControlEventBytes(oldSnapshot), at, operator));
  t.is(t.throws(() => foldSnapshotRecord(s, stale, trust), { instanceOf: ControlLogRegressionError })?.code, ControlLogRegressionCode.snapshot_regressed);
  // A reader that persisted a newer epoch refuses a snapshot of an older one.
  const genuine = encodeControlSnapshot(REGION, s);
  const r = snapshotRecordFromBytes(at, genuine, signEntryHash(hashControlEventBytes(genuine), at, operator));
  t.is(foldSnapshotRecord({ ...old, lastSeq: 2 }, r, trust).headHash, s.headHash, "a reader behind adopts it");
  t.is(t.throws(() => foldSnapshotRecord({ ...old, lastSeq: 2, topologyEpoch: 9 }, r, trust), { instanceOf: ControlLogRegressionError })?.code, ControlLogRegressionCode.snapshot_regressed);
});

test("a follower checks a snapshot by content, not by the wording of refusal messages", async (t) => {
  const { store, f } = await signedLog();
  await appendRaw(store, f, release("h1", 1, 10, ["h2"]), ctl); // refused: already released
  const s = await f.refresh();
  t.is(s.rejected.length, 1);
  const reworded = { ...s, rejected: s.rejected.map((r) => ({ ...r, message: "worded by another release" })) };
  await store.appendSnapshot(encodeControlSnapshot(REGION, reworded), s.lastSeq, operator);
  await f.refresh();
  t.is(f.distrusted, undefined);
  // Against the state before that snapshot, one that changes a refusal's code is a different fold.
  const recoded = { ...s, rejected: s.rejected.map((r) => ({ ...r, code: ControlFenceCode.bad_signature })) };
  const r = snapshotRecordFromBytes(s.lastSeq + 1, encodeControlSnapshot(REGION, recoded));
  t.is(t.throws(() => foldSnapshotRecord(s, r), { instanceOf: ControlLogRegressionError })?.code, ControlLogRegressionCode.snapshot_mismatch);
});

test("a controller's persisted head compacted away below a snapshot still passes the start check; a log that lost it otherwise does not", async (t) => {
  const { store, f } = await signedLog();
  const head = { region: REGION, seq: 4, hash: (await store.readRecordsFrom(4))[0]!.hash };
  await checkControlLogHead(store, head);
  await new ControlLogCompactor(store, f, operator, 1).compact();
  await t.notThrowsAsync(checkControlLogHead(store, head), "the snapshot at 7 replaced entries 1-6");
  const bare = new InMemoryControlLog(REGION);
  const g = new ControlLogFollower(bare, undefined, trust);
  await commitControlEvent(bare, g, as(operator), () => admitController);
  for (const b of [admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2"]), release("h1", 1, 10, ["h2"])]) await commitControlEvent(bare, g, as(ctl), () => b);
  await bare.purgeBelow(5); // purged without a snapshot
  t.is((await t.throwsAsync(checkControlLogHead(bare, head), { instanceOf: ControlLogRegressionError }))?.code, ControlLogRegressionCode.log_regression);
});
