/**
 * Junk in the control log from a principal allowed to append (the controller's NATS credentials):
 * on a secured nats-server, trusted readers skip each undecodable entry as a counted
 * `unreadable_entry` and keep following the log; the controller keeps committing after it.
 */
import test from "ava";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlFenceCode } from "../../custody/control-error.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { isReleaseAuthorized, type ControlState } from "../../custody/control-state.ts";
import { signEntryHash, type ControlSigner, type ControlTrust } from "../../custody/control-trust.ts";
import { hashControlEventBytes } from "../../custody/control-event.ts";
import { controlEventSpec } from "../../custody/custody-messages.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { ctrlSubject } from "../../transport/protocol/subjects.ts";
import { encodeMessage } from "../../transport/protocol/wire/codec.ts";
import { initJetStreamControlLog, openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { admit, clock, createOb, release } from "../custody/control-fixtures.ts";
import { startSecuredBus } from "./secured-bus.ts";

const REGION = "junk";
const signer = (id: string): ControlSigner & { publicKey: Uint8Array } => {
  const kp = generateHolderKeyPair();
  return { id, privateKey: kp.privateKey, publicKey: kp.publicKey };
};
const essentials = (s: ControlState) => ({ holders: s.holders, obligations: s.obligations, controllers: s.controllers, headHash: s.headHash });

test("junk committed with the controller's credentials is skipped by trusted readers as a counted unreadable_entry: state unchanged, the log still trusted, the controller commits on and a fresh reader agrees", async (t) => {
  const bus = await startSecuredBus([
    { key: "op", role: "operator", id: "op", scope: { commitRegions: [REGION] } },
    { key: "c1", role: "controller", id: "c1", scope: { controlRegion: REGION, volumes: ["vol"], releaseTo: ["h1", "h2"] } },
  ]);
  try {
    const operator = signer("operator");
    const ctl = signer("c1");
    const trust: ControlTrust = { operators: { operator: publicKeyFromRaw(operator.publicKey) } };
    const op = await bus.connect("op");
    const { log: opStore } = await initJetStreamControlLog(op.transport.connection, { region: REGION });
    const admitController: ControlEventBody = { type: "admit_controller", controllerId: ctl.id, publicKey: ctl.publicKey };
    await commitControlEvent(opStore, new ControlLogFollower(opStore, undefined, trust), { controller: "operator", clock, signer: operator }, () => admitController);
    await opStore.close();

    const c1 = await bus.connect("c1");
    const store = await openJetStreamControlLog(c1.transport.connection, { region: REGION });
    const f = new ControlLogFollower(store, undefined, trust);
    const as = { controller: ctl.id, clock, signer: ctl };
    for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(store, f, as, () => b);
    const before = essentials(f.state);

    // The controller's credentials publish junk straight to the control subject: 7 raw bytes, and a
    // well-formed control-event message whose event bytes are garbage, signed with the admitted key.
    const garbage = new Uint8Array([0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1]);
    const last = await store.lastSeq();
    const sig = signEntryHash(hashControlEventBytes(garbage), last + 2, ctl);
    c1.transport.publish(ctrlSubject(REGION), garbage);
    c1.transport.publish(ctrlSubject(REGION), encodeMessage(controlEventSpec, { event: garbage, signer: sig.signer, signature: sig.signature }));
    await c1.transport.flush();
    t.deepEqual(c1.violations, [], "the server accepted both: the controller may append");
    for (let i = 0; i < 50 && (await store.lastSeq()) < last + 2; i++) await new Promise((r) => setTimeout(r, 50));

    const after = await f.refresh();
    t.is(f.distrusted, undefined, "the reader still trusts the log");
    t.deepEqual(essentials(after), before, "nothing the junk could name changed");
    t.deepEqual(after.rejected.slice(-2).map((r) => [r.seq, r.code]), [[last + 1, ControlFenceCode.unreadable_entry], [last + 2, ControlFenceCode.unreadable_entry]]);

    // The controller commits on top of the junk, and a reader replaying everything agrees.
    await commitControlEvent(store, f, as, () => release("h1", 1, 10, ["h2"]));
    t.true(isReleaseAuthorized(f.state, "ob1", "h1", RangeSet.of(1, 10)));
    const fresh = new ControlLogFollower(store, undefined, trust);
    const replayed = await fresh.replay();
    t.deepEqual(essentials(replayed), essentials(f.state));
    t.is(replayed.rejected.filter((r) => r.code === ControlFenceCode.unreadable_entry).length, 2);
    // A reader without a trust root (unsigned mode, unit tests only) still stops at the junk.
    await t.throwsAsync(new ControlLogFollower(store).replay(), { code: "unreadable_entry" });
    await store.close();
  } finally {
    await bus.stop();
  }
});
