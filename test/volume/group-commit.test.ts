import test from "ava";
import type { Clock } from "../../core/clock.ts";
import { GroupCommit } from "../../volume/group-commit.ts";

/** A clock whose timers fire only when the test says so. */
function manualClock() {
  const timers = new Map<number, () => void>();
  let next = 1;
  const clock: Clock = {
    now: () => 0,
    setTimeout: (fn) => {
      const id = next++;
      timers.set(id, fn as () => void);
      return id;
    },
    clearTimeout: (id) => void timers.delete(id as number),
  };
  const fire = () => {
    const fns = [...timers.values()];
    timers.clear();
    fns.forEach((f) => f());
  };
  return { clock, fire, pending: () => timers.size };
}

const tick = () => new Promise((r) => setImmediate(r));

test("items submitted together form one batch in submission order, bounded by maxBatch", async (t) => {
  const batches: number[][] = [];
  const gc = new GroupCommit<number>({ maxBatch: 3, maxDelayMs: 0, clock: manualClock().clock }, async (b) => void batches.push(b), () => t.fail());
  for (let i = 1; i <= 7; i++) gc.submit(i);
  await tick();
  t.deepEqual(batches, [[1, 2, 3], [4, 5, 6], [7]]);
});

test("with maxDelay a lone item waits for the timer and company joins its batch", async (t) => {
  const batches: number[][] = [];
  const m = manualClock();
  const gc = new GroupCommit<number>({ maxBatch: 8, maxDelayMs: 5, clock: m.clock }, async (b) => void batches.push(b), () => t.fail());
  gc.submit(1);
  await tick();
  t.deepEqual(batches, []);
  gc.submit(2);
  t.is(m.pending(), 1);
  m.fire();
  await tick();
  t.deepEqual(batches, [[1, 2]]);
});

test("a failing batch is reported with its items and later batches still run", async (t) => {
  const failed: number[][] = [];
  const ran: number[][] = [];
  const gc = new GroupCommit<number>(
    { maxBatch: 1, maxDelayMs: 0, clock: manualClock().clock },
    async (b) => {
      if (b[0] === 1) throw new Error("io");
      ran.push(b);
    },
    (_e, b) => failed.push(b),
  );
  gc.submit(1);
  gc.submit(2);
  await tick();
  t.deepEqual(failed, [[1]]);
  t.deepEqual(ran, [[2]]);
});
