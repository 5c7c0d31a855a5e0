/**
 * The seeded world played by the production actors (sim/actor-world.ts): real Holder,
 * VolumeWriter and Controller machines over SimNetwork in virtual time.
 */
import test from "ava";
import { runActorWorld } from "../../sim/actor-runner.ts";
import { FaultKind } from "../../sim/fault-schedule.ts";
import { MAX_AUDITS } from "../../actors/controller/controller-core.ts";

test("the same seed gives the same run event for event; another seed gives another", async (t) => {
  const a = await runActorWorld(9, { holders: 4, durationMs: 6_000 });
  const b = await runActorWorld(9, { holders: 4, durationMs: 6_000 });
  t.is(a.traceHash, b.traceHash);
  t.is(a.steps, b.steps);
  t.deepEqual(a.trace, b.trace);
  t.deepEqual(a.counters, b.counters);
  const c = await runActorWorld(10, { holders: 4, durationMs: 6_000 });
  t.not(a.traceHash, c.traceHash);
});

test("without faults the writer's acknowledged writes flow through every holder and the controller releases under its rules", async (t) => {
  const r = await runActorWorld(9, { holders: 4, faults: [], durationMs: 10_000 });
  t.is(r.violation, undefined);
  t.deepEqual(r.errors, []);
  t.true(r.writes > 10, `acknowledged writes: ${r.writes}`);
  t.true(r.grants > 0, "the controller committed release frontiers");
  t.true((r.counters["deliver"] ?? 0) > r.writes * 4, "units, credits and receipts crossed the simulated network");
});

test("a crashed holder restarts as a new incarnation, asks to be admitted, and the controller's admission policy admits it", async (t) => {
  const r = await runActorWorld(9, { holders: 4, faults: [{ kind: FaultKind.strike, atMs: 3_000, scenario: "crash:h2" }], durationMs: 8_000 });
  t.is(r.violation, undefined);
  t.deepEqual(r.errors, []);
  const crash = r.trace.findIndex((e) => e.kind === "crashed" && e.actor === "h2");
  const restart = r.trace.findIndex((e) => e.kind === "start" && e.actor === "h2" && (e.detail as { inc?: number } | undefined)?.inc === 2);
  const admit = r.trace.findIndex((e) => e.kind === "admitted" && e.actor === "h2" && (e.detail as { inc?: number } | undefined)?.inc === 2);
  t.true(crash >= 0 && restart > crash && admit > restart, `crash ${crash}, restart ${restart}, admit ${admit}`);
  t.false(r.trace.some((e) => e.kind === "operator" && String((e.detail as { what?: string } | undefined)?.what).startsWith("admit")), "nobody but the controller's policy admitted it");
});

test("a destroyed site is declared failed in the control log a second later and never comes back", async (t) => {
  const r = await runActorWorld(9, { holders: 4, faults: [{ kind: FaultKind.strike, atMs: 3_000, scenario: `destroy:${"use1-az1"}` }], durationMs: 8_000 });
  t.deepEqual(r.errors, []);
  const destroyed = r.trace.filter((e) => e.kind === "destroyed").map((e) => e.actor);
  t.true(destroyed.includes("writer"), "the writer's AZ is the one destroyed");
  for (const h of destroyed.filter((a) => a !== "writer")) {
    t.true(r.trace.some((e) => e.kind === "operator" && (e.detail as { what?: string }).what === `declare ${h}`), `declared ${h}`);
    t.false(r.trace.some((e) => e.kind === "start" && e.actor === h && ((e.detail as { inc?: number }).inc ?? 0) > 1), `${h} stays gone`);
  }
});

test("the controller's memory does not grow with releases or writes: 32 audits kept, every release persisted in the control log, commit history as short after 40 s as after 10 s", async (t) => {
  const short = await runActorWorld(9, { holders: 4, faults: [], durationMs: 10_000 });
  const long = await runActorWorld(9, { holders: 4, faults: [], durationMs: 40_000 });
  t.log(JSON.stringify({ short: short.controller, long: long.controller, writes: [short.writes, long.writes] }));
  const c = long.controller!;
  t.true(c.releasesCommitted > MAX_AUDITS, `${c.releasesCommitted} releases committed`);
  t.is(c.audits, MAX_AUDITS, "in memory: the newest 32 only");
  t.is(c.releaseEntries, c.releasesCommitted, "every committed release is an entry of the control log");
  t.true(long.writes >= 3 * short.writes);
  t.true(c.commitRuns <= short.controller!.commitRuns, `commit runs: ${short.controller!.commitRuns} after 10 s, ${c.commitRuns} after 40 s`);
});

test("the operator places a seeded hold and ends it: held ranges stay while it stands, and are released after", async (t) => {
  const hold = { kind: FaultKind.hold, atMs: 2_000, durationMs: 3_000, holdKind: "pitr_pin", first: 1, last: 10_000, holders: [] } as const;
  const r = await runActorWorld(9, { holders: 4, faults: [hold], durationMs: 9_000 });
  t.is(r.violation, undefined, "held_range_released and release_beyond_log hold");
  t.deepEqual(r.errors, []);
  const ops = r.trace.filter((e) => e.kind === "operator").map((e) => ({ at: e.atMs, what: (e.detail as { what: string }).what }));
  const placed = ops.find((o) => o.what === "hold hold-0");
  const ended = ops.find((o) => o.what === "end hold-0");
  t.truthy(placed && ended && ended.at >= placed.at + hold.durationMs, JSON.stringify(ops));
  const grants = r.trace.filter((e) => e.kind === "grant_release");
  t.false(grants.some((e) => e.atMs > placed!.at + 100 && e.atMs < ended!.at), "no release frontier was committed while everything is held");
  t.true(grants.some((e) => e.atMs > ended!.at), "releases go on once the hold ended");
});
