import test from "ava";
import { buildWorld } from "../../sim/world.ts";
import { runActorWorld } from "../../sim/actor-runner.ts";
import { FaultKind, scheduleShape } from "../../sim/fault-schedule.ts";
import { SimArgumentError } from "../../sim/sim-argument-error.ts";

test("the same seed builds the same world; different seeds build different worlds", (t) => {
  t.deepEqual(buildWorld(42), buildWorld(42));
  t.notDeepEqual(buildWorld(42), buildWorld(43));
});

test("a world has 1-10 holders across regions/AZs, a DAG fed by the writer, and a contract with every host crash", (t) => {
  const sizes = new Set<number>();
  for (let seed = 0; seed < 200; seed++) {
    const w = buildWorld(seed);
    sizes.add(w.holders.length);
    t.true(w.holders.length >= 1 && w.holders.length <= 10);
    const ids = w.holders.map((h) => h.id);
    const fed = new Set([...w.writer.downstream, ...w.holders.flatMap((h) => h.downstream)]);
    t.true(ids.every((id) => fed.has(id)), "every holder has an upstream");
    for (const h of w.holders) for (const d of h.downstream) t.true(ids.indexOf(d) > ids.indexOf(h.id), "edges go forward (no cycle)");
    t.true(w.scenarios.some((s) => s.name === "crash:writer"));
    for (const h of w.holders) t.true(w.scenarios.some((s) => s.name === `crash:${h.id}`));
  }
  t.is(sizes.size, 10);
});

test("overrides fix the holder count and replace the fault schedule", (t) => {
  const w = buildWorld(5, { holders: 3, faults: [{ kind: FaultKind.controllerLoss, atMs: 100, durationMs: 50 }] });
  t.is(w.holders.length, 3);
  t.is(scheduleShape(w.faults), "controller_loss");
  t.is(t.throws(() => buildWorld(5, { holders: 11 }), { instanceOf: SimArgumentError })?.code, "invalid_sim_argument");
});

test("--steps bounds a run of the production actors", async (t) => {
  const r = await runActorWorld(2, { steps: 500 });
  t.is(r.steps, 500);
  t.true(r.virtualMs < r.spec.timing.durationMs);
});

test("across the corpus every fault kind occurs, including sequential strikes", (t) => {
  const kinds = new Set<string>();
  let sequential = 0;
  for (let seed = 1; seed <= 100; seed++) {
    const faults = buildWorld(seed).faults;
    for (const f of faults) kinds.add(f.kind);
    if (faults.filter((f) => f.kind === FaultKind.strike).length >= 2) sequential++;
  }
  // A pause of the active controller needs a standby to matter: only failover worlds draw it.
  t.deepEqual([...kinds].sort(), Object.values(FaultKind).filter((k) => k !== FaultKind.controllerPause).sort());
  t.true(sequential > 10, `${sequential} worlds with sequential strikes`);
  const failover = new Set<string>();
  for (let seed = 1; seed <= 100; seed++) for (const f of buildWorld(seed, { failover: true }).faults) failover.add(f.kind);
  t.deepEqual([...failover].sort(), Object.values(FaultKind).sort());
});
