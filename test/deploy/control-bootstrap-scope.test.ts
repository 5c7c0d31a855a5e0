/**
 * `applyBootstrap` scopes the log (issue #46): controllers admitted with their volumes, holders with
 * the volumes of their obligations; run again on a log from before scoping, it admits each
 * unscoped controller again with its volumes, and then changes nothing more.
 */
import test from "ava";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { systemClock } from "../../core/clock.ts";
import { applyBootstrap } from "../../policies/deploy/control-bootstrap.ts";
import type { BootstrapPlan } from "../../policies/deploy/deployment-plan.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const operator = generateHolderKeyPair();
const ctl = generateHolderKeyPair();
const signer = { id: "operator", privateKey: operator.privateKey };
const trust = { operators: { operator: publicKeyFromRaw(operator.publicKey) } };
const plan: BootstrapPlan = {
  controlRegion: "ctl",
  operatorId: "operator",
  operatorPublicKey: hex(operator.publicKey),
  controllers: [{ id: "ctl-1", publicKey: hex(ctl.publicKey), volumes: ["vol-a"] }],
  holders: ["h1", "h2"].map((id) => ({ id, incarnation: 1 as const, publicKey: hex(generateHolderKeyPair().publicKey), failureDomain: `r/az/${id}` })),
  obligations: [
    { volume: "vol-a", lane: "l0", holders: ["h1"] },
    { volume: "vol-b", lane: "l0", holders: ["h2"] },
  ],
};

test("a fresh log: each controller and holder is admitted with its volumes; a second run commits nothing", async (t) => {
  const store = new InMemoryControlLog("ctl");
  const r = await applyBootstrap(store, plan, signer);
  t.deepEqual(r.controllers, ["ctl-1"]);
  const s = await new ControlLogFollower(store, undefined, trust).refresh();
  t.deepEqual(s.controllers?.["ctl-1"]?.volumes, ["vol-a"]);
  t.deepEqual([s.holders["h1"]?.volumes, s.holders["h2"]?.volumes], [["vol-a"], ["vol-b"]]);
  const again = await applyBootstrap(store, plan, signer);
  t.deepEqual([again.controllers, again.admitted, again.obligations], [[], [], []]);
  t.is(await store.lastSeq(), s.lastSeq);
});

test("a log from before scoping (controller admitted unscoped): running the bootstrap again admits it with its volumes", async (t) => {
  const store = new InMemoryControlLog("ctl");
  const f = new ControlLogFollower(store, undefined, trust);
  await commitControlEvent(store, f, { controller: "operator", clock: systemClock, signer }, () => ({ type: "admit_controller", controllerId: "ctl-1", publicKey: ctl.publicKey }));
  t.is((await f.refresh()).controllers?.["ctl-1"]?.volumes, undefined);
  const r = await applyBootstrap(store, plan, signer);
  t.deepEqual(r.controllers, ["ctl-1"]);
  t.deepEqual((await f.refresh()).controllers?.["ctl-1"]?.volumes, ["vol-a"]);
});
