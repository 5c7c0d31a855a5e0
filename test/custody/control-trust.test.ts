import anyTest, { type TestFn } from "ava";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlFenceCode } from "../../custody/control-error.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import { isReleaseAuthorized, type ControlState } from "../../custody/control-state.ts";
import type { ControlSigner, ControlTrust } from "../../custody/control-trust.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { closeNats, connectNats, type NatsConnection } from "../../transport/nats-connection.ts";
import { controlStreamName, initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { jetstreamManager } from "@nats-io/jetstream";
import { ctrlSubject } from "../../transport/protocol/subjects.ts";
import { encodeControlEvent, hashControlEventBytes } from "../../custody/control-event.ts";
import { controlEventSpec } from "../../custody/custody-messages.ts";
import { encodeMessage } from "../../transport/protocol/wire/codec.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { admit, clock, createOb, release } from "./control-fixtures.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const signer = (id: string): ControlSigner & { publicKey: Uint8Array } => {
  const kp = generateHolderKeyPair();
  return { id, privateKey: kp.privateKey, publicKey: kp.publicKey };
};
const operator = signer("operator");
const ctl = signer("ctl-a");
const trust: ControlTrust = { operators: { operator: publicKeyFromRaw(operator.publicKey) } };

const as = (s: ControlSigner) => ({ controller: s.id, clock, signer: s });
const admitController = (c: { id: string; publicKey: Uint8Array }): ControlEventBody => ({ type: "admit_controller", controllerId: c.id, publicKey: c.publicKey });

/** A signed log: the operator admits ctl-a, ctl-a admits two holders and an obligation. */
async function signedLog(): Promise<{ store: InMemoryControlLog; f: ControlLogFollower }> {
  const store = new InMemoryControlLog("us-east");
  const f = new ControlLogFollower(store, undefined, trust);
  await commitControlEvent(store, f, as(operator), () => admitController(ctl));
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(store, f, as(ctl), () => b);
  return { store, f };
}

const essentials = (s: ControlState) => ({ holders: s.holders, obligations: s.obligations, holds: s.holds, controllers: s.controllers, headHash: s.headHash });

test("a signed log folds events its operator and the controller the operator admitted signed", async (t) => {
  const { store, f } = await signedLog();
  await commitControlEvent(store, f, as(ctl), () => release("h1", 1, 10, ["h2"]));
  t.true(isReleaseAuthorized(f.state, "ob1", "h1", RangeSet.of(1, 10)));
  t.deepEqual(f.state.rejected, []);
  t.deepEqual(Object.keys(f.state.controllers ?? {}), ["ctl-a"]);
});

test("an unsigned entry (a rogue re-admitting h1 with its own key) is skipped, counted, and the chain goes on from the last accepted event", async (t) => {
  const { store, f } = await signedLog();
  const before = essentials(f.state);
  const rogue = generateHolderKeyPair();
  await commitControlEvent(store, f, { controller: "ctl-a", clock }, () => ({ ...admit("h1", 2), publicKey: rogue.publicKey }));
  t.deepEqual(essentials(f.state), before, "state unchanged: h1 keeps its key and incarnation");
  t.is(f.state.rejected.at(-1)?.code, ControlFenceCode.unsigned_event);
  // The real controller commits on top of it and every reader (a fresh one included) agrees.
  await commitControlEvent(store, f, as(ctl), () => release("h1", 1, 5, ["h2"]));
  t.true(isReleaseAuthorized(f.state, "ob1", "h1", RangeSet.of(1, 5)));
  const fresh = new ControlLogFollower(store, undefined, trust);
  t.deepEqual(essentials(await fresh.refresh()), essentials(f.state));
  t.is(f.distrusted, undefined);
});

test("a forged signature, a lifted signature and a controller admitting controllers are all refused", async (t) => {
  const { store, f } = await signedLog();
  const before = essentials(f.state);
  const mallory = signer("ctl-a"); // claims the controller's name, has another key
  await commitControlEvent(store, f, as(mallory), () => release("h1", 1, 10, ["h2"]));
  t.is(f.state.rejected.at(-1)?.code, ControlFenceCode.bad_signature);
  const other = signer("ctl-b");
  await commitControlEvent(store, f, as(operator), () => admitController(other));
  const afterAdmit = essentials(f.state);
  // ctl-b signs an event that names ctl-a as its author.
  await commitControlEvent(store, f, { controller: "ctl-a", clock, signer: other }, () => release("h1", 1, 10, ["h2"]));
  t.is(f.state.rejected.at(-1)?.code, ControlFenceCode.signer_not_allowed);
  // An admitted controller may not admit another controller.
  await commitControlEvent(store, f, as(ctl), () => admitController(signer("ctl-evil")));
  t.is(f.state.rejected.at(-1)?.code, ControlFenceCode.signer_not_allowed);
  t.deepEqual(essentials(f.state), afterAdmit);
  t.false(isReleaseAuthorized(f.state, "ob1", "h1", RangeSet.of(1, 10)));
  t.notDeepEqual(before.controllers, afterAdmit.controllers);
});

test("a reader without a trust root reads the same log unsigned (unit tests and the simulator keep working)", async (t) => {
  const store = new InMemoryControlLog("us-east");
  const f = new ControlLogFollower(store);
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"]), release("h1", 1, 3, ["h2"])]) await commitControlEvent(store, f, { controller: "ctl-a", clock }, () => b);
  t.true(isReleaseAuthorized(f.state, "ob1", "h1", RangeSet.of(1, 3)));
});

test("on JetStream: a valid but unsigned control message published straight to the subject is skipped by trusted readers; signatures survive the store", async (t) => {
  const nc: NatsConnection = await connectNats({ servers: t.context.nats.url, name: "trust", maxReconnectAttempts: 0 });
  try {
    const { log: store } = await initJetStreamControlLog(nc, { region: "trust-js" });
    const f = new ControlLogFollower(store, undefined, trust);
    await commitControlEvent(store, f, as(operator), () => admitController(ctl));
    for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(store, f, as(ctl), () => b);
    const before = essentials(f.state);
    // A rogue client: a well-formed release of h1's ranges, chained correctly, not signed.
    const s = f.state;
    const bytes = encodeControlEvent({ region: "trust-js", controller: "ctl-a", preparedEpoch: s.topologyEpoch, preparedGeneration: s.policyGeneration, prevHash: s.headHash, issuedAt: 1, ...release("h1", 1, 10, ["h2"]) });
    nc.publish(ctrlSubject("trust-js"), encodeMessage(controlEventSpec, { event: bytes, signer: "ctl-a", signature: new Uint8Array(64) }));
    nc.publish(ctrlSubject("trust-js"), encodeMessage(controlEventSpec, { event: bytes }));
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    const after = await f.refresh();
    t.deepEqual(essentials(after), before);
    t.deepEqual(after.rejected.slice(-2).map((r) => r.code), [ControlFenceCode.bad_signature, ControlFenceCode.unsigned_event]);
    t.false(isReleaseAuthorized(after, "ob1", "h1", RangeSet.of(1, 10)));
    // A replay: the controller's own signed admit of h1, captured from the stream and published again as is.
    const jsm = await jetstreamManager(nc);
    const stored = await jsm.streams.getMessage(controlStreamName("trust-js"), { seq: 2 });
    nc.publish(ctrlSubject("trust-js"), stored!.data);
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    const replayedOnce = await f.refresh();
    t.is(replayedOnce.rejected.at(-1)?.code, ControlFenceCode.bad_signature, "a signed entry replayed at another position does not verify");
    t.deepEqual(essentials(replayedOnce), before);
    t.is(f.distrusted, undefined, "a replay neither changes state nor makes the reader distrust the log");
    // The controller still commits, and a reader replaying the whole stream agrees.
    await commitControlEvent(store, f, as(ctl), () => release("h1", 1, 4, ["h2"]));
    const replayed = await new ControlLogFollower(store, undefined, trust).replay();
    t.deepEqual(essentials(replayed), essentials(f.state));
    t.true(isReleaseAuthorized(replayed, "ob1", "h1", RangeSet.of(1, 4)));
    t.is(hashControlEventBytes(bytes).length, 64);
  } finally {
    await closeNats(nc);
  }
});
