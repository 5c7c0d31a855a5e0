/**
 * `custody log compact --every`: the control log's compaction as a process of its own (issue #45,
 * "a log that stays bounded"), against a real nats-server with JetStream. It compacts whenever
 * enough entries were committed, survives SIGKILL (a restarted one finds the newest snapshot in the
 * log and does not snapshot again until it is due), and ends cleanly on SIGTERM.
 */
import anyTest, { type ExecutionContext, type TestFn } from "ava";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { commitControlEvent } from "../../custody/control-commit.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { isSnapshotRecord } from "../../custody/control-snapshot.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { initJetStreamControlLog, openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { custodyCommand } from "../kit/custody-command.ts";
import { reapOnExit } from "../kit/child-reaper.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { admit, clock, createOb, release } from "./control-fixtures.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

interface Compactor {
  readonly child: ChildProcess;
  /** The JSON lines it printed, in order. */
  readonly lines: { snapshotSeq: number; throughSeq: number; purged: number }[];
  readonly stderr: string[];
  readonly ended: Promise<number | null>;
}

function startCompactor(t: ExecutionContext<NatsTestContext>, region: string): Compactor {
  const c = custodyCommand(["log", "compact", "--region", region, "--server", t.context.nats.url, "--every", "0.2", "--min-entries", "5", "--json"]);
  const child = spawn(c.command, c.args, { stdio: ["ignore", "pipe", "pipe"] });
  reapOnExit(child);
  t.teardown(() => void child.kill("SIGKILL"));
  const out: Compactor = { child, lines: [], stderr: [], ended: new Promise((resolve) => child.once("exit", (code) => resolve(code))) };
  createInterface({ input: child.stdout! }).on("line", (l) => out.lines.push(JSON.parse(l) as Compactor["lines"][number]));
  createInterface({ input: child.stderr! }).on("line", (l) => out.stderr.push(l));
  return out;
}

async function until(what: string, ok: () => boolean, c: Compactor): Promise<void> {
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!ok()) throw new Error(`${what} did not happen; compactor said: ${c.stderr.join(" | ")}`);
}

test.serial("`custody log compact --every` compacts when due, resumes after SIGKILL without a needless snapshot, and ends on SIGTERM", async (t) => {
  const region = "snap-timer";
  const nc = await connectNats({ servers: t.context.nats.url, name: "setup", maxReconnectAttempts: 0 });
  t.teardown(() => closeNats(nc).catch(() => undefined));
  const { log: store } = await initJetStreamControlLog(nc, { region });
  const f = new ControlLogFollower(store);
  const commit = (b: ControlEventBody) => commitControlEvent(store, f, { controller: "ctl-a", clock }, () => b);
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"])]) await commit(b);
  for (let i = 0; i < 4; i++) await commit(release("h1", 10 * i + 1, 10 * i + 10, ["h2"]));

  const first = startCompactor(t, region);
  await until("the first compaction", () => first.lines.length === 1, first);
  t.like(first.lines[0], { snapshotSeq: 8, throughSeq: 7, purged: 7 });
  // Two more entries: not due (5 needed) — several ticks pass without a snapshot.
  for (let i = 4; i < 6; i++) await commit(release("h1", 10 * i + 1, 10 * i + 10, ["h2"]));
  await new Promise((r) => setTimeout(r, 1_000));
  t.is(first.lines.length, 1);

  // SIGKILL; a new process finds the snapshot at 8 and waits for 5 entries after it.
  first.child.kill("SIGKILL");
  await first.ended;
  const second = startCompactor(t, region);
  await new Promise((r) => setTimeout(r, 1_500));
  t.deepEqual(second.lines, [], "the restarted compactor found the newest snapshot and did not take another");
  for (let i = 6; i < 9; i++) await commit(release("h1", 10 * i + 1, 10 * i + 10, ["h2"]));
  await until("the second compaction", () => second.lines.length === 1, second);
  t.like(second.lines[0], { snapshotSeq: 14, throughSeq: 13, purged: 6 });
  // A reader that starts now (its own store: this one's tail still holds what it read before the purges).
  const fresh = await openJetStreamControlLog(nc, { region });
  const records = await fresh.readRecordsFrom(1);
  t.true(isSnapshotRecord(records[0]!) && records[0]!.seq === 14, `the log starts at the newest snapshot (found ${records[0]?.seq})`);
  // The old follower's tail may lag the snapshot the compactor committed: read through the head.
  t.deepEqual(await new ControlLogFollower(fresh).refresh(), await f.refreshToHead());
  await fresh.close();

  second.child.kill("SIGTERM");
  t.is(await second.ended, 0, second.stderr.join("\n"));
  await store.close();
});
