import test from "ava";
import { createActor, fromPromise, type SnapshotFrom } from "xstate";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { repairMachine } from "../../actors/repair/repair.machine.ts";
import { repairEstimate } from "../../actors/repair/repair-estimate.ts";
import { repairMachineFor } from "../../actors/repair/repair-executors.ts";
import type { RepairStepInput } from "../../actors/repair/repair.machine.ts";
import type { RepairCopy } from "../../actors/repair/repair-steps.ts";
import type { Transport } from "../../transport/index.ts";
import { baseHoldings, FakeRepairPort, holding, recovery, settings } from "./repair-fixture.ts";

// The repair machine driven through every state with fake ports and virtual time: no NATS, no files.

/** The copy step (the only one that needs NATS) replaced by one that "copies" instantly. */
function scriptedCopy(clock: SimulatedClock, calls: RepairStepInput[], onCopy: () => void = () => undefined) {
  return fromPromise(async ({ input }: { input: RepairStepInput }) => {
    calls.push(input);
    onCopy();
    return { units: 29, bytes: 4_000, at: clock.now() };
  });
}

/** Lets the invoked children's promises settle, firing due timers in virtual time, until the actor stops. */
async function runToEnd(actor: { getSnapshot(): { status: string } }, clock: SimulatedClock): Promise<void> {
  for (let i = 0; i < 10_000 && actor.getSnapshot().status === "active"; i++) {
    await new Promise((r) => setImmediate(r));
    if (actor.getSnapshot().status === "active" && clock.nextDue() !== undefined) clock.step();
  }
}

/** A repair machine over a fake port and virtual time, with every snapshot it went through. */
function start(port: FakeRepairPort, copy: ReturnType<typeof scriptedCopy>, clock: SimulatedClock) {
  const ports = { port, transport: {} as Transport, clock };
  const machine = repairMachineFor(ports).provide({ actors: { copy } });
  const actor = createActor(machine, { input: settings, clock });
  const seen: SnapshotFrom<typeof repairMachine>[] = [];
  actor.subscribe((s) => seen.push(s));
  seen.push(actor.getSnapshot());
  actor.start();
  return { actor, seen };
}

const valueOf = (s: SnapshotFrom<typeof repairMachine>): string =>
  typeof s.value === "string" ? s.value : Object.entries(s.value).map(([k, v]) => `${k}.${String(v)}`)[0]!;

test("a scripted repair: plain JSON context in every state, protections held then ended, the report timed", async (t) => {
  const clock = new SimulatedClock({ startMs: 1_000 });
  const port = new FakeRepairPort();
  const copies: RepairStepInput[] = [];
  // The replacement's receipts arrive 25 ms after the copy: the machine looks every 10 ms.
  const copy = scriptedCopy(clock, copies, () =>
    clock.schedule(() => port.holdings.push(holding("h-new", "l0", RangeSet.of(1, 40), clock.now())), 25),
  );
  const { actor, seen } = start(port, copy, clock);
  await runToEnd(actor, clock);

  for (const s of seen) t.deepEqual(JSON.parse(JSON.stringify(s.context)), s.context, `plain in ${valueOf(s)}`);
  const states = [...new Set(seen.map(valueOf))];
  t.deepEqual(states, [
    "surveying",
    "admitting",
    "copying",
    "awaiting_receipts.checking",
    "awaiting_receipts.waiting",
    "activating",
    "done",
  ]);
  t.deepEqual(port.protected, [{ id: "repair-v1-7-l0", lane: "l0", ranges: [[1, 9], [21, 40]] }]);
  t.deepEqual(port.unprotected, ["repair-v1-7-l0", "repair-v1-7-l1"], "every surveyed lane's protection is ended");
  t.deepEqual(port.admitted, ["h-new:1,2,3,250"], "the replacement is admitted with its own key");
  t.deepEqual(copies, [{ task: seen[0]!.context.task, missing: { l0: [[1, 9], [21, 40]], l1: [] } }]);
  t.deepEqual(
    port.transfers.map((x) => [x.transferId, x.ranges.toJSON()]),
    [["repair-v1-7-l0-h-dead", [[1, 9], [21, 40]]]],
  );
  const out = actor.getSnapshot().output!;
  t.deepEqual(out, {
    repairId: "repair-v1-7",
    report: {
      repairId: "repair-v1-7",
      missing: { l0: [[1, 9], [21, 40]], l1: [] },
      copiedUnits: 29,
      copiedBytes: 4_000,
      measuredMs: 30,
      estimate: repairEstimate(recovery, 4_000, 1_000),
      controlSeq: 102,
    },
  });
  t.is(clock.now(), 1_030, "three looks at the receipts, 10 ms apart, in virtual time");
});

test("receipts that never come fail the repair in awaiting_receipts once receiptTimeoutMs has passed", async (t) => {
  const clock = new SimulatedClock({ startMs: 0 });
  const port = new FakeRepairPort();
  const { actor, seen } = start(port, scriptedCopy(clock, []), clock);
  await runToEnd(actor, clock);
  for (const s of seen) t.deepEqual(JSON.parse(JSON.stringify(s.context)), s.context);
  const out = actor.getSnapshot().output!;
  t.is(out.report, undefined);
  t.is(out.failure?.step, "awaiting_receipts");
  t.is(out.failure?.code, "repair_timeout");
  t.true(clock.now() > 50 && clock.now() <= 60, `given up within one poll of the deadline (${clock.now()} ms)`);
  t.deepEqual(port.transfers, [], "nothing is activated");
  t.deepEqual(port.unprotected, ["repair-v1-7-l0", "repair-v1-7-l1"]);
});

test("a refused step is the outcome's failure, naming the step; nothing after it runs", async (t) => {
  const clock = new SimulatedClock();
  const port = new FakeRepairPort();
  port.admitError = new CustodyError("controller_refused", "not the leader", {});
  const copies: RepairStepInput[] = [];
  const { actor, seen } = start(port, scriptedCopy(clock, copies), clock);
  await runToEnd(actor, clock);
  t.deepEqual(actor.getSnapshot().output, {
    repairId: "repair-v1-7",
    failure: { step: "admitting", code: "controller_refused", message: "not the leader" },
  });
  t.deepEqual(copies, []);
  t.deepEqual(JSON.parse(JSON.stringify(seen.at(-1)!.context)), seen.at(-1)!.context);
  t.deepEqual(port.unprotected, ["repair-v1-7-l0", "repair-v1-7-l1"], "the survey's protections are ended");
});

test("a survivor that no longer holds a missing range fails the copy (repair_source_lost)", async (t) => {
  const clock = new SimulatedClock();
  const port = new FakeRepairPort();
  const lost = fromPromise<RepairCopy, RepairStepInput>(async () => {
    throw new CustodyError("repair_source_lost", "no survivor retains part of the missing coverage", {});
  });
  const ports = { port, transport: {} as Transport, clock };
  const actor = createActor(repairMachineFor(ports).provide({ actors: { copy: lost } }), { input: settings, clock });
  actor.start();
  await runToEnd(actor, clock);
  t.is(actor.getSnapshot().output?.failure?.step, "copying");
  t.is(actor.getSnapshot().output?.failure?.code, "repair_source_lost");
});

test("nothing missing: the repair still admits and ends, activating nothing (control sequence 0)", async (t) => {
  const clock = new SimulatedClock();
  const port = new FakeRepairPort();
  port.holdings = baseHoldings().filter((h) => h.holderId !== "h-dead");
  const { actor } = start(port, scriptedCopy(clock, []), clock);
  await runToEnd(actor, clock);
  const report = actor.getSnapshot().output?.report;
  t.deepEqual(report?.missing, { l0: [], l1: [] });
  t.is(report?.controlSeq, 0);
  t.deepEqual(port.protected, [], "empty lanes are not protected");
});

test("the machine without its ports fails at its first step, saying who supplies them", async (t) => {
  const actor = createActor(repairMachine, { input: settings });
  actor.start();
  await new Promise((r) => setImmediate(r));
  const out = actor.getSnapshot().output;
  t.is(out?.failure?.step, "surveying");
  t.regex(out?.failure?.message ?? "", /repairMachineFor/);
});
