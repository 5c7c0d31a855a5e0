/**
 * The lease keeper of a volume's controllers (issue #45), on an in-memory control log and a
 * manual clock: the first claims, the standby waits while the holder's heartbeats move and claims
 * after `timeoutMs` of silence, and a deposed holder steps down without committing anything more.
 */
import test from "ava";
import { LeaseKeeper } from "../../actors/controller/lease-keeper.ts";
import { leaseStep, UNWATCHED, watchSilence, type LeaseTimings } from "../../actors/controller/lease-step.ts";
import { Counters } from "../../core/index.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog, type ControlLogStore } from "../../custody/control-log.ts";
import { leaseOf } from "../../custody/control-lease.ts";
import { foldControlLog } from "../../custody/control-state.ts";
import { manualClock } from "../custody/receipt-fixtures.ts";

const TIMINGS: LeaseTimings = { renewMs: 1_000, timeoutMs: 4_000, checkMs: 500 };
const lease = (holder: string, term = 1) => ({ holder, term, renewMs: 1_000, timeoutMs: 4_000, sinceSeq: 1, heartbeatSeq: 1 });

test("leaseStep: claim when unleased, renew when idle, step down when deposed, claim after the timeout", (t) => {
  t.deepEqual(leaseStep("a", "standby", undefined, 0), { kind: "claim", term: 1 });
  t.deepEqual(leaseStep("a", "active", lease("a"), 999), { kind: "wait" });
  t.deepEqual(leaseStep("a", "active", lease("a"), 1_000), { kind: "renew", term: 1 });
  t.deepEqual(leaseStep("a", "active", lease("b", 2), 0), { kind: "step_down", holder: "b", term: 2 });
  t.deepEqual(leaseStep("b", "standby", lease("a"), 3_999), { kind: "wait" });
  t.deepEqual(leaseStep("b", "standby", lease("a"), 4_000), { kind: "claim", term: 2 });
  t.deepEqual(leaseStep("a", "standby", lease("a", 3), 0), { kind: "claim", term: 4 }, "a restarted holder starts a term of its own");
});

function keeper(store: ControlLogStore, id: string, clock: ReturnType<typeof manualClock>, lines: string[], active: Set<string>) {
  return new LeaseKeeper("vol1", TIMINGS, {
    store,
    follower: new ControlLogFollower(store),
    identity: { controller: id, clock },
    clock,
    counters: new Counters(),
    log: (l) => lines.push(l),
    becomeActive: async () => void active.add(id),
    stepDown: async () => void active.delete(id),
  });
}

test("a standby takes over after the holder's silence; the deposed holder steps down and commits nothing more", async (t) => {
  const store = new InMemoryControlLog("r");
  const clock = manualClock();
  const lines: string[] = [];
  const active = new Set<string>();
  const a = keeper(store, "ctl-a", clock, lines, active);
  const b = keeper(store, "ctl-b", clock, lines, active);
  await a.tick();
  await b.tick();
  t.deepEqual([...active], ["ctl-a"]);
  t.is(b.role, "standby");
  // ctl-a renews while alive: ctl-b never claims.
  for (let i = 0; i < 20; i++) {
    clock.advance(500);
    await a.tick();
    await b.tick();
  }
  t.is(b.role, "standby");
  t.true(a.role === "active" && leaseOf(foldControlLog(await store.readAll()), "vol1")!.holder === "ctl-a");
  // ctl-a stops (SIGSTOP): ctl-b claims once 4 s passed without a heartbeat.
  let waited = 0;
  while (b.role === "standby") {
    clock.advance(500);
    waited += 500;
    await b.tick();
  }
  // Silence counts from the last heartbeat ctl-b saw, up to one renewal before ctl-a stopped.
  t.true(waited >= TIMINGS.timeoutMs - TIMINGS.renewMs && waited <= TIMINGS.timeoutMs + TIMINGS.checkMs, `took over after ${waited} ms`);
  const claimedAt = await store.lastSeq();
  // ctl-a wakes: it learns from the log it lost the lease and steps down.
  await a.tick();
  t.is(a.role, "standby");
  t.deepEqual([...active], ["ctl-b"]);
  t.regex(lines.at(-1)!, /ctl-a: lost the control lease of vol1 \(ctl-b holds it at term 2\); stepping down/);
  for (let i = 0; i < 4; i++) {
    clock.advance(500);
    await a.tick();
    await b.tick();
  }
  const after = (await store.readAll()).filter((e) => e.seq > claimedAt);
  t.true(after.every((e) => e.event.controller === "ctl-b"), "nothing from the deposed controller after the claim");
  t.deepEqual(foldControlLog(await store.readAll()).rejected, []);
});

test("watchSilence: silence counts only time the keeper could read the log", (t) => {
  let w = watchSilence(UNWATCHED, "a/1/5", 0, 1_500);
  t.is(w.sinceMs, 0);
  w = watchSilence(w, "a/1/5", 1_000, 1_500);
  t.is(w.sinceMs, 0, "an unchanged heartbeat watched without a gap stays silent since it was first seen");
  w = watchSilence(w, "a/1/5", 20_000, 1_500);
  t.is(w.sinceMs, 20_000, "19 s without a read: silence starts again at the next read");
  w = watchSilence(w, "a/1/6", 20_500, 1_500);
  t.is(w.sinceMs, 20_500, "a new heartbeat restarts it");
});

test("a log unreadable for longer than the lease timeout does not move the lease: the standby counts silence from when it can read again", async (t) => {
  const log = new InMemoryControlLog("r");
  let down = false;
  // Every read and append fails while the log is down (a stream-leader election that outlasts the timeout).
  const store = new Proxy(log, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => (down ? Promise.reject(new Error("no responders: stream leader election")) : (v as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
  const clock = manualClock();
  const lines: string[] = [];
  const active = new Set<string>();
  const a = keeper(store, "ctl-a", clock, lines, active);
  const b = keeper(store, "ctl-b", clock, lines, active);
  await a.tick();
  await b.tick();
  t.deepEqual([...active], ["ctl-a"]);
  down = true;
  for (let i = 0; i < 24; i++) {
    clock.advance(500);
    await a.tick();
    await b.tick();
  }
  down = false;
  // Back after 12 s (timeout 4 s): ctl-a renews within its renewal interval, and ctl-b never claims.
  for (let i = 0; i < 20; i++) {
    clock.advance(500);
    await b.tick();
    await a.tick();
  }
  t.is(b.role, "standby");
  t.is(a.role, "active");
  const s = foldControlLog(await log.readAll());
  t.is(leaseOf(s, "vol1")!.holder, "ctl-a");
  t.is(leaseOf(s, "vol1")!.term, 1, "no new term");
  // It still takes over once ctl-a goes silent while the log is readable.
  let waited = 0;
  while (b.role === "standby" && waited < 10_000) {
    clock.advance(500);
    waited += 500;
    await b.tick();
  }
  t.is(b.role, "active");
  t.true(waited <= TIMINGS.timeoutMs + TIMINGS.checkMs, `took over after ${waited} ms`);
});
