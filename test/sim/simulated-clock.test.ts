import test from "ava";
import { createActor, setup } from "xstate";
import { SimClockError, SimulatedClock } from "../../sim/simulated-clock.ts";

test("timers fire in due order, ties in insertion order, and time jumps to each due time", (t) => {
  const clock = new SimulatedClock({ startMs: 1000 });
  const log: string[] = [];
  clock.setTimeout(() => log.push(`c@${clock.now()}`), 30);
  clock.setTimeout(() => log.push(`a@${clock.now()}`), 10);
  clock.setTimeout(() => log.push(`b@${clock.now()}`), 10);
  clock.setTimeout(() => log.push(`z@${clock.now()}`), 0);
  t.is(clock.pending, 4);
  t.is(clock.runUntilIdle(), 4);
  t.deepEqual(log, ["z@1000", "a@1010", "b@1010", "c@1030"]);
  t.is(clock.now(), 1030);
});

test("clearTimeout cancels a pending timer and ignores unknown ids", (t) => {
  const clock = new SimulatedClock();
  let fired = 0;
  const id = clock.setTimeout(() => fired++, 5);
  clock.setTimeout(() => fired++, 6);
  clock.clearTimeout(id);
  clock.clearTimeout(12345);
  clock.clearTimeout("nope");
  t.is(clock.pending, 1);
  clock.runUntilIdle();
  t.is(fired, 1);
});

test("advanceTo fires only timers due by then and leaves later ones pending", (t) => {
  const clock = new SimulatedClock();
  const log: number[] = [];
  for (const d of [5, 10, 15]) clock.setTimeout(() => log.push(d), d);
  clock.advanceTo(10);
  t.deepEqual(log, [5, 10]);
  t.is(clock.now(), 10);
  clock.advanceBy(100);
  t.deepEqual(log, [5, 10, 15]);
  t.is(clock.now(), 110);
  t.false(clock.step());
});

test("a timer scheduled by a firing timer runs in the same advance when due in range", (t) => {
  const clock = new SimulatedClock();
  const log: number[] = [];
  clock.setTimeout(() => {
    log.push(clock.now());
    clock.setTimeout(() => log.push(clock.now()), 3);
  }, 2);
  clock.advanceTo(5);
  t.deepEqual(log, [2, 5]);
});

test("moving time backwards or a self-rescheduling loop throws SimClockError", (t) => {
  const clock = new SimulatedClock({ startMs: 50 });
  t.is(t.throws(() => clock.advanceTo(10), { instanceOf: SimClockError })?.code, "sim_clock");
  const loop = (): void => void clock.setTimeout(loop, 1);
  loop();
  t.throws(() => clock.runUntilIdle(100), { instanceOf: SimClockError });
});

test("XState 'after' delays fire in virtual time, not wall time", (t) => {
  const machine = setup({ delays: { sealDelay: 250 } }).createMachine({
    initial: "open",
    states: {
      open: { after: { sealDelay: "sealed" } },
      sealed: { after: { 10_000: "flushed" } },
      flushed: { type: "final" },
    },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, { clock }).start();
  t.is(actor.getSnapshot().value, "open");
  clock.advanceTo(249);
  t.is(actor.getSnapshot().value, "open");
  clock.advanceTo(250);
  t.is(actor.getSnapshot().value, "sealed");
  clock.advanceBy(9_999);
  t.is(actor.getSnapshot().value, "sealed");
  clock.advanceBy(1);
  t.is(actor.getSnapshot().value, "flushed");
  actor.stop();
});

test("auto-advance fires pending timers without anyone stepping, so awaited code progresses", async (t) => {
  const clock = new SimulatedClock({ autoAdvance: true });
  const seen = await new Promise<number>((resolve) => clock.setTimeout(() => resolve(clock.now()), 60_000));
  t.is(seen, 60_000);
});
