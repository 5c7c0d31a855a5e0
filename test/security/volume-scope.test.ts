/**
 * Control rights per volume (issue #46), on a running deployment `custody init` wrote: two volumes,
 * two controllers, one control log. With only ctl-2's NATS credentials and signing key (vol-b's
 * controller), every control event tried on vol-a is refused by the roles' fold, and vol-a's
 * custody (the control log's holders, obligations, frontiers, holds) and its status (the
 * controller's status document) are unchanged; no process restarts, vol-a keeps serving.
 */
import test from "ava";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { appendAsController, findingEvents, otherVolumeEvents, VOL_A_OBLIGATION } from "../../tools/attack/volume-scope-attacks.ts";
import { invariantChanges, StateReader } from "../../tools/attack/network-state.ts";
import { connectAs } from "../../tools/attack/principal.ts";
import { startSecuredNetwork } from "../../tools/attack/secured-network.ts";
import { nextStatus } from "../../cli/commands/status.ts";
import { systemClock } from "../../core/clock.ts";
import { commitControlEventRetrying } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import type { ControlState } from "../../custody/control-state.ts";
import { privateKeyFromPkcs8 } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { VolumeStatus } from "../../transport/protocol/wire/volume-status.ts";
import { readPublicKeyHex } from "../../actors/runtime/control-trust-files.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import type { NatsTransport } from "../../transport/nats-transport.ts";

/** Generous: it only ends a hung wait, it measures nothing. */
const WAIT_MS = 60_000;

/** vol-a's next status document whose surviving cut of l0 is above `above` (vol-a is served and covered). */
async function statusPast(t: NatsTransport, above: number): Promise<VolumeStatus> {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    const doc = await nextStatus(t, "vol-a", WAIT_MS);
    const cut = doc.survivingCut?.find(([lane]) => lane === "l0")?.[1] ?? 0;
    if (cut > above || Date.now() > end) return doc;
  }
}
const cutOf = (d: VolumeStatus) => d.survivingCut?.find(([lane]) => lane === "l0")?.[1] ?? 0;
// What a required scenario loses past the receipt deadline (a write still in flight is not lost: policies/steady-verdict.ts).
const scenarioShape = (d: VolumeStatus) => d.scenarios.map((s) => ({ name: s.name, required: s.required, lost: s.required ? (s.overdueSeqs ?? s.lostSeqs) : "-" }));

/** vol-a's custody in the fold: its holders (incarnation, key, status, volumes), its obligation's responsible holders and the disk holder's frontier, its holds. */
function volA(s: ControlState) {
  const o = s.obligations[VOL_A_OBLIGATION]!;
  return {
    holders: ["h-e1", "h-w1"].map((h) => ({ h, inc: s.holders[h]!.incarnation, key: Buffer.from(s.holders[h]!.publicKey).toString("hex"), status: s.holders[h]!.status, volumes: s.holders[h]!.volumes })),
    responsible: Object.keys(o.responsible).sort(),
    diskReleased: (o.released["h-w1"] ?? RangeSet.EMPTY).toJSON(),
    holds: Object.values(s.holds).filter((h) => h.volume === "vol-a").map((h) => h.holdId),
    failovers: Object.keys(s.failovers ?? {}),
    persistence: Object.keys(s.persistence ?? {}),
    controllers: Object.fromEntries(Object.entries(s.controllers ?? {}).map(([id, c]) => [id, c.volumes])),
    fence: [s.topologyEpoch, s.policyGeneration],
  };
}

test("two volumes, two controllers, one control log: every control event ctl-2 tries on vol-a is refused; vol-a's custody and status are unchanged", async (t) => {
  t.timeout(10 * 60_000);
  const net = await startSecuredNetwork({ secondVolume: true });
  t.teardown(() => net.stop());
  const op = await connectAs(net, "operator", "east");
  const ctl2 = await connectAs(net, "controller-ctl-2", "east");
  t.teardown(async () => {
    await op.transport.close().catch(() => undefined);
    await ctl2.transport.close().catch(() => undefined);
  });
  const reader = await StateReader.open(net, op);
  t.teardown(() => reader.close());
  const trust = { operators: { operator: readPublicKeyHex(join(net.out, "operator", "operator.pub")) } };
  const store = await openJetStreamControlLog(op.transport.connection, { region: net.controlRegion });
  t.teardown(() => store.close());
  const fold = new ControlLogFollower(store, undefined, trust);

  // The bootstrap scoped each controller to its volume and each holder to the volume it serves.
  const boot = await fold.refresh();
  t.deepEqual(boot.controllers?.["ctl-1"]?.volumes, ["vol-a"]);
  t.deepEqual(boot.controllers?.["ctl-2"]?.volumes, ["vol-b"]);
  t.deepEqual(boot.holders["h-e2"]?.volumes, ["vol-b"]);
  // vol-a is written, receipted and covered before anything is tried.
  const statusBefore = await statusPast(op.transport, 0);
  t.true(cutOf(statusBefore) > 0, `vol-a covered: ${JSON.stringify(statusBefore.survivingCut)}`);
  // The operator pins a range far ahead of the writer, so vol-a has a hold ctl-2 can try to end
  // (retried when ctl-1 commits a release at the same moment, as an operator's commit is).
  const operatorKey = privateKeyFromPkcs8(readFileSync(join(net.out, "operator", "operator.key")));
  await commitControlEventRetrying(store, fold, { controller: "operator", clock: systemClock, signer: { id: "operator", privateKey: operatorKey } }, () => ({
    type: "hold_ranges", holdId: "pin-far", kind: "pitr_pin", volume: "vol-a", lane: "l0", ranges: RangeSet.of(1e12, 1e12 + 9), holders: [], untilMs: 0, by: "operator",
  }));
  const before = await reader.read();
  const custodyBefore = volA(await fold.refresh());
  t.deepEqual(custodyBefore.holds, ["pin-far"]);

  const tries = [
    ...(await appendAsController(net, ctl2, "controller-ctl-2", findingEvents("scope-it"))),
    ...(await appendAsController(net, ctl2, "controller-ctl-2", (s0) => otherVolumeEvents("it", s0))),
  ];
  t.true(tries.length >= 15, `${tries.length} events tried`);
  for (const x of tries) {
    // The activation names a transfer whose prepare was skipped: nothing to activate.
    t.is(x.code, x.label === "activate_replacement" ? "unknown_transfer" : "not_authorized_for_volume", x.label);
    t.deepEqual(x.changed, [], `${x.label} changed nothing`);
  }
  t.true(tries.some((x) => x.label.startsWith("end_hold pin-far")));

  // vol-a's custody: the same holders and keys, responsible holders, disk frontier, holds, fence, controllers' scopes.
  const after = await fold.refresh();
  t.deepEqual(volA(after), custodyBefore);
  t.false(Object.keys(after.obligations[VOL_A_OBLIGATION]!.responsible).includes("h-e2"));
  t.is(fold.distrusted, undefined);
  t.deepEqual(volA(await new ControlLogFollower(store, undefined, trust).replay()), custodyBefore, "a fresh reader agrees");
  // vol-a's status: the same scenarios, nothing lost, and the surviving cut keeps moving.
  const statusAfter = await statusPast(op.transport, cutOf(statusBefore));
  t.deepEqual(scenarioShape(statusAfter), scenarioShape(statusBefore));
  t.true(cutOf(statusAfter) > cutOf(statusBefore), `vol-a's cut moved on: ${cutOf(statusBefore)} → ${cutOf(statusAfter)}`);
  t.is(statusAfter.controller, "ctl-1");
  // No process restarted or left; admitted holders and obligations as before.
  t.deepEqual(invariantChanges(before, await reader.read()), []);
});
