/**
 * The controller's statechart with its executors replaced by recorders: no NATS, no files, and a
 * simulated clock. It folds through the pure step in any state after the start, evaluates only
 * when something changed (or was asked for) at the declared interval, runs a round as its two
 * phases, and publishes the round's status document as an effect.
 */
import test from "ava";
import { createActor, fromPromise, SimulatedClock, waitFor } from "xstate";
import { controllerMachine, ControllerState, lifecycleOf } from "../../actors/controller/controller.machine.ts";
import { initialControllerData } from "../../actors/controller/controller-state.ts";
import type { ControllerConfig } from "../../actors/controller/controller-config.ts";
import type { ControllerEffect } from "../../actors/controller/controller-effects.ts";
import { encodeMessage } from "../../transport/protocol/wire/index.ts";
import { writerProgressSpec } from "../../transport/protocol/wire/writer-messages.ts";
import type { VolumeStatus } from "../../transport/protocol/index.ts";

const config = { controllerId: "ctl", topology: { volume: "vol1", lanes: ["l0"], holderSites: {}, bases: [], staleAfterMs: 1 } } as unknown as ControllerConfig;
const progress = (head: number) => ({
  subject: "custody.v1.event.vol1",
  data: encodeMessage(writerProgressSpec, { writer: "w", volume: "vol1", term: 1, lanes: [{ lane: "l0", head, runs: [] }], at: 1 }),
  headers: {},
});

function rig() {
  const clock = new SimulatedClock();
  const executed: ControllerEffect[] = [];
  const phases: string[] = [];
  let stopped = false;
  const machine = controllerMachine.provide({
    actors: {
      startCore: fromPromise<void>(async () => undefined),
      readLog: fromPromise<void>(async () => void phases.push("read")),
      decide: fromPromise(async () => {
        phases.push("decide");
        return { volume: "vol1", controlSeq: phases.length } as unknown as VolumeStatus;
      }),
    },
    actions: {
      execute: (_, e) => void executed.push(e),
      checkCoverage: () => undefined,
      challengeHolders: () => undefined,
      recordAuditVerdict: () => undefined,
      startRepairs: () => void phases.push("repairs"),
      recordRepair: () => undefined,
      stopCore: () => void (stopped = true),
    },
    guards: { logAhead: () => false },
  });
  const actor = createActor(machine, {
    input: { state: initialControllerData(config), intervalMs: 100, coverageCheckMs: 10_000, auditEveryMs: 0 },
    clock,
  });
  return { clock, executed, phases, actor, stopped: () => stopped };
}

const settled = (a: ReturnType<typeof rig>["actor"]) => waitFor(a, (s) => s.matches(ControllerState.Waiting));

test("start, then one round (read, decide, publish, repairs); no change, no round; progress or a request for one makes the next", async (t) => {
  const r = rig();
  r.actor.start();
  await settled(r.actor);
  t.deepEqual(r.phases, ["read", "decide", "repairs"]);
  const published = r.executed.filter((e) => e.type === "publishStatus");
  t.is(published.length, 1);
  t.deepEqual(r.actor.getSnapshot().context.state.status, { volume: "vol1", controlSeq: 2 });
  t.false(r.actor.getSnapshot().context.state.dirty);

  r.clock.increment(100);
  await settled(r.actor);
  t.is(r.phases.length, 3, "nothing changed: the interval passes without a round");

  r.actor.send({ type: "nats.event", msg: progress(7) });
  t.deepEqual(r.actor.getSnapshot().context.state.heads, { l0: 7 }, "folded at once, between rounds");
  t.true(r.actor.getSnapshot().context.state.dirty);
  r.clock.increment(99);
  t.is(r.phases.length, 3, "not before the interval");
  r.clock.increment(1);
  await settled(r.actor);
  t.deepEqual(r.phases.slice(3), ["read", "decide", "repairs"]);

  r.actor.send({ type: "evaluate.now" });
  r.clock.increment(100);
  await settled(r.actor);
  t.is(r.phases.length, 9, "asked for: a round although nothing changed");

  r.actor.send({ type: "stop" });
  t.true(r.stopped());
  t.is(lifecycleOf(r.actor.getSnapshot().value), ControllerState.Stopped);
});

test("a failed phase ends the round, counts it, and the next round runs again", async (t) => {
  const r = rig();
  let fail = true;
  const machine = controllerMachine.provide({
    actors: {
      startCore: fromPromise<void>(async () => undefined),
      readLog: fromPromise<void>(async () => {
        if (fail) throw new Error("log unreachable");
      }),
      decide: fromPromise(async () => ({ volume: "vol1" }) as unknown as VolumeStatus),
    },
    actions: {
      execute: (_, e) => void r.executed.push(e),
      checkCoverage: () => undefined,
      challengeHolders: () => undefined,
      recordAuditVerdict: () => undefined,
      startRepairs: () => undefined,
      recordRepair: () => undefined,
      stopCore: () => undefined,
    },
    guards: { logAhead: () => false },
  });
  const actor = createActor(machine, {
    input: { state: initialControllerData(config), intervalMs: 100, coverageCheckMs: 10_000, auditEveryMs: 0 },
    clock: r.clock,
  });
  actor.start();
  await settled(actor);
  t.is(actor.getSnapshot().context.lastError, "log unreachable");
  t.deepEqual(r.executed, [{ type: "count", name: "evaluation_failed" }]);
  t.is(actor.getSnapshot().context.state.status, undefined);
  fail = false;
  actor.send({ type: "nudge" });
  r.clock.increment(100);
  await settled(actor);
  t.deepEqual(actor.getSnapshot().context.state.status, { volume: "vol1" });
  actor.stop();
});
