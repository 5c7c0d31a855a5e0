import anyTest, { type TestFn } from "ava";
import type { ActorRefFrom, AnyActorRef } from "xstate";
import { unitRecordBytes } from "../../arena/segment.ts";
import { systemClock } from "../../core/clock.ts";
import { makeTransportUnit } from "../../lanes/transport-unit.ts";
import { laneLogOf, type laneArenaMachine } from "../../actors/lane-arena/lane-arena.machine.ts";
import { CreditSender } from "../../actors/hop/index.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, launchHolder, settle, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

type LaneArenaRef = ActorRefFrom<typeof laneArenaMachine>;

const twoLanes = (holderId: string) =>
  holderConfig(holderId, {
    lanes: [
      { volume: VOLUME, lane: "l0", upstream: ["w1"], downstream: [] },
      { volume: VOLUME, lane: "l1", upstream: ["w1"], downstream: [] },
    ],
  });

/** The holder actor's lane-arena children, by id. */
function laneArenaChildren(children: Record<string, AnyActorRef | undefined>): Record<string, LaneArenaRef> {
  return Object.fromEntries(Object.entries(children).filter(([id]) => id.startsWith("lane-arena:"))) as Record<string, LaneArenaRef>;
}

test.serial("each lane a holder serves is a lane-arena actor among the holder actor's children, and a unit admitted over NATS is in that child's snapshot", async (t) => {
  const url = t.context.nats.url;
  const h = await launchHolder(url, new KeyRing(), twoLanes("h-lanes"));
  const wt = await transport(url, "writer-lanes");
  const w = new Writer(wt, "h-lanes");
  try {
    const children = laneArenaChildren(h.holder.actor.getSnapshot().children);
    t.deepEqual(Object.keys(children).sort(), ["lane-arena:vol1/l0", "lane-arena:vol1/l1"]);
    for (const v of h.holder.lanes()) t.is<unknown, unknown>(v.arenaActor, children[`lane-arena:${v.volume}/${v.lane}`], `lane ${v.volume}/${v.lane} is backed by its child actor`);
    for (let s = 1; s <= 3; s++) w.send(unit(s, 1, 2048));
    const l0 = children["lane-arena:vol1/l0"]!;
    await eventually(() => laneLogOf(l0.getSnapshot().context, VOLUME, "l0")!.retained.covers(1, 3), "the l0 actor's log retains 1-3");
    const ctx = l0.getSnapshot().context;
    t.is(ctx.arena.report().segments.open + ctx.arena.report().segments.sealed, 1, "the units sit in the l0 actor's arena");
    t.true(ctx.arena.report().ramStoredBytes >= 3 * 2048);
    t.is(children["lane-arena:vol1/l1"]!.getSnapshot().context.arena.report().ramStoredBytes, 0, "l1's arena is untouched");
    t.is(h.holder.lane("vol1", "l0")!.log.retained.toString(), "1-3", "the holder reads the actor's log");
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
  t.is(h.holder.actor.getSnapshot().status, "done");
  for (const v of h.holder.lanes()) t.is(v.arenaActor.getSnapshot().status, "stopped", "a retired holder's lane actors are stopped");
});

test.serial("a lane-arena actor that fails is a typed refusal on its lane, not a crash: the holder keeps serving its other lanes", async (t) => {
  const url = t.context.nats.url;
  const h = await launchHolder(url, new KeyRing(), twoLanes("h-fail"));
  const wt = await transport(url, "writer-fail");
  const w0 = new Writer(wt, "h-fail");
  const w1 = new CreditSender({ transport: wt, clock: systemClock, sender: "w1", holder: "h-fail", volume: VOLUME, lane: "l1", retryMs: 20 }).attach();
  const unitL1 = (s: number) => makeTransportUnit({ volume: VOLUME, lane: "l1", term: 1, firstSeq: s, lastSeq: s, commitTs: [1_700_000_000_000 + s], payload: new Uint8Array(512).fill(s) });
  const sendL1 = (s: number) => {
    const u = unitL1(s);
    w1.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
  };
  try {
    sendL1(1);
    const l1 = h.holder.lane("vol1", "l1")!;
    await eventually(() => l1.log.retained.has(1), "l1 admits before its actor fails");
    // A bug inside the lane's actor (a non-custody exception) stops that actor: sent to the child directly.
    const l1Actor = laneArenaChildren(h.holder.actor.getSnapshot().children)["lane-arena:vol1/l1"]!;
    l1Actor.send({ type: "import", bytes: null as unknown as Uint8Array });
    t.is(l1.arenaActor.getSnapshot().status, "error");
    t.is(h.holder.counters.get("lane_arena_failed"), 1);
    t.true(h.log.some((o) => o.type === "rejected" && o.code === "lane_arena_failed.lane-arena:vol1/l1"));

    sendL1(2);
    await eventually(() => h.holder.counters.get("internal_error.lane_arena_stopped") >= 1, "the unit for the failed lane is refused as lane_arena_stopped");
    t.false(l1.log.retained.has(2));
    t.is(h.holder.actor.getSnapshot().status, "active");
    t.is(h.holder.state(), "serving");

    for (let s = 1; s <= 3; s++) w0.send(unit(s, 1, 1024));
    await eventually(() => h.holder.lane("vol1", "l0")!.log.retained.covers(1, 3), "the other lane still admits");
  } finally {
    w0.sender.close();
    w1.close();
    await settle(20);
    await wt.close();
    await h.close();
  }
});
