/**
 * ControlLogPeers.refresh after a commit the caller has just heard of: a read already in flight
 * may have started before that commit, so the caller waits for the next read, not that one (the
 * attack run's "release frontiers of a first hop" row saw a legitimate frontier counted as
 * `edge_release_unverified` when a writer's catch-up joined an older read).
 */
import test from "ava";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog, type ControlLogStore } from "../../custody/control-log.ts";
import { ControlLogPeers } from "../../custody/control-peers.ts";
import { admit, clock, createOb, release, who } from "./control-fixtures.ts";

test("a refresh asked for while a read is in flight returns a state read after it started, shared by every caller meanwhile", async (t) => {
  const log = new InMemoryControlLog("r");
  const writer = new ControlLogFollower(log);
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(log, writer, who("ctl-a"), () => b);
  // The peers' reads are held until released, as a slow JetStream read would be.
  const gates: (() => void)[] = [];
  let reads = 0;
  const slow = new Proxy(log, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== "readRecordsFrom" || typeof v !== "function") return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return async (...args: unknown[]) => {
        reads++;
        await new Promise<void>((resolve) => gates.push(resolve));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as ControlLogStore;
  const peers = new ControlLogPeers(new ControlLogFollower(slow), clock);
  const first = peers.refresh();
  while (gates.length === 0) await new Promise((r) => setImmediate(r));
  // A release is committed after the first read started; two callers then ask for the log.
  await commitControlEvent(log, writer, who("ctl-a"), () => release("h1", 1, 10, ["h2"]));
  const a = peers.refresh();
  const b = peers.refresh();
  gates.shift()!();
  await first;
  for (let i = 0; i < 1_000 && gates.length === 0; i++) await new Promise((r) => setImmediate(r));
  t.is(gates.length, 1, "a second read started after the first");
  gates.shift()!();
  const [sa, sb] = await Promise.all([a, b]);
  t.true(peers.releasedAt("ob1", "h1").covers(1) && peers.releasedAt("ob1", "h1").covers(10), "the release committed mid-read is seen");
  t.is(sa.lastSeq, 4);
  t.is(sb.lastSeq, 4);
  t.is(reads, 2, "the two later callers share one read");
});

test("a refresh to the head asks the store how far the log goes before it reads (a standing tail may lag a commit made elsewhere)", async (t) => {
  const log = new InMemoryControlLog("r");
  const calls: string[] = [];
  const watched = new Proxy(log, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        if (prop === "lastSeq" || prop === "readRecordsFrom") calls.push(String(prop));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as ControlLogStore;
  const peers = new ControlLogPeers(new ControlLogFollower(watched), clock);
  await peers.refresh();
  t.deepEqual(calls, ["readRecordsFrom"], "a plain refresh reads what the store has");
  calls.length = 0;
  await peers.refresh(true);
  t.deepEqual(calls, ["lastSeq", "readRecordsFrom"]);
});
