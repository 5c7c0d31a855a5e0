import { ActorWorld, SIM_EPOCH_MS } from "./actor-world.ts";
import { EventTrace } from "./event-trace.ts";
import { ContractTally } from "./contract-tally.ts";
import { FaultKind, scheduleKey, scheduleShape, type FaultEvent } from "./fault-schedule.ts";
import {
  checkCredits,
  checkHolds,
  checkReceipts,
  checkReleaseCoverage,
  checkReleased,
  checkReleasesCommitted,
  checkStrike,
  InvariantId,
  survivingCut,
  type Violation,
  type WorldObservation,
} from "./invariants.ts";
import type { RunOptions, RunResult } from "./runner.ts";
import { SimulatedClock } from "./simulated-clock.ts";
import { LeaseAudit } from "./lease-audit.ts";
import { buildWorld, networkFor, overridesOf, runRandom } from "./world.ts";

const ALL_CHECKS = Object.values(InvariantId);

/** Lets every promise chain the last timer started run to its end (no real I/O is involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs the world of `seed` with the production actors (real Holder, VolumeWriter and Controller
 * machines; see ActorWorld) over a SimNetwork in virtual time, applies the fault schedule on time
 * and checks the invariants after every clock step. Deterministic: after each timer the runner
 * waits until every promise it set off has settled, and nothing reads real time, real randomness
 * or real files, so the same seed and options give the same trace hash.
 */
export async function runActorWorld(seed: number, opts: RunOptions = {}): Promise<RunResult> {
  const spec = buildWorld(seed, overridesOf(opts));

  const checks = new Set(opts.checks ?? ALL_CHECKS);
  const maxSteps = opts.steps ?? 2_000_000;
  const trace = new EventTrace();
  const clock = new SimulatedClock({ startMs: SIM_EPOCH_MS });
  const rel = () => clock.now() - SIM_EPOCH_MS;
  const net = networkFor(spec, clock, trace, SIM_EPOCH_MS);

  let violation: Violation | undefined;
  let violationStep: number | undefined;
  let steps = 0;
  let grants = 0;
  const errors: string[] = [];
  const contract = new ContractTally(spec.timing.settleMs);
  const fail = (vs: Violation[]) => {
    const v = vs.find((x) => checks.has(x.invariant));
    if (v !== undefined && violation === undefined) {
      violation = { ...v, atMs: rel() };
      violationStep = steps;
      trace.record({ atMs: rel(), kind: "VIOLATION", actor: v.invariant, detail: { message: v.message } });
    }
  };
  const observe = (): WorldObservation => ({
    atMs: rel(),
    holders: world.holderTruths(),
    credits: world.credits(),
    receipts: world.takeReceipts(),
    holds: world.log.holds(),
  });

  const world: ActorWorld = new ActorWorld(
    spec,
    clock,
    net,
    trace,
    runRandom(spec, "workload"),
    {
      confirmed: (cuts) => contract.confirmed(cuts, rel()),
      granted: () => {
        grants++;
        if (contract.inContract(rel()))
          fail(checkReleaseCoverage(observe(), spec.sites, spec.scenarios, contract.confirmedMax));
      },
      error: (where, err) => {
        const what =
          err instanceof Error ? `${(err as { code?: string }).code ?? err.name}: ${err.message}` : String(err);
        const text = `${where}: ${what}`;
        errors.push(text);
        trace.record({ atMs: rel(), kind: "error", actor: where, detail: { text } });
      },
    },
    { ...(opts.authorize ? { authorizeReleases: opts.authorize } : {}) },
  );

  const applyFault = (f: FaultEvent, index: number) => {
    if (f.kind === FaultKind.strike) {
      const s = spec.scenarios.find((x) => x.name === f.scenario);
      if (s !== undefined) {
        // What must be protected again: the newest acknowledged write that physically survives
        // the strike somewhere (holders, or the writer's own outbox).
        const survived = survivingCut([...world.holderTruths(), world.writerTruth()], spec.sites, s.losses);
        contract.struck(rel(), s.name, Math.min(world.ackedHead, survived));
      }
    }
    contract.faultStarting(f, rel());
    switch (f.kind) {
      case FaultKind.strike: {
        const s = spec.scenarios.find((x) => x.name === f.scenario);
        if (s === undefined) break;
        const confirmed = contract.confirmedAtStrike(s.name);
        trace.record({
          atMs: rel(),
          kind: "strike",
          actor: "world",
          detail: { scenario: s.name, confirmed: confirmed ?? null },
        });
        fail(checkStrike(observe(), spec.sites, s, confirmed));
        if (violation !== undefined) return;
        world.strike(s);
        break;
      }
      case FaultKind.evidenceDegrade:
        world.degradeEvidence(f.holder);
        break;
      case FaultKind.controllerLoss:
        world.loseController(f.durationMs);
        break;
      case FaultKind.controllerPause:
        world.pauseController(f.durationMs);
        break;
      case FaultKind.partition: {
        const id = net.partition(f.a, f.b);
        trace.record({
          atMs: rel(),
          kind: "partition",
          actor: "world",
          detail: { a: f.a, b: f.b, durationMs: f.durationMs },
        });
        clock.schedule(
          () => {
            net.heal(id);
            trace.record({ atMs: rel(), kind: "heal", actor: "world", detail: { a: f.a, b: f.b } });
          },
          f.durationMs,
          "heal",
        );
        break;
      }
      case FaultKind.hold:
        world.operator.placeHold(f, `hold-${index}`, spec.volume, spec.lane);
        break;
    }
    contract.faultApplied(f);
  };
  spec.faults.forEach((f, i) => clock.schedule(() => applyFault(f, i), f.atMs, "fault"));
  // With failover, the control log is audited for its leases after every step (sim/lease-audit.ts).
  const leases = spec.failover === true ? new LeaseAudit(world.store) : undefined;

  const started = world.start().catch((err) => errors.push(`start: ${String(err)}`));
  let lastHolders = new Map<string, WorldObservation["holders"][number]>();
  const end = SIM_EPOCH_MS + spec.timing.durationMs;
  await settle(); // the start runs as far as it can before the first timer
  for (;;) {
    if (violation !== undefined || steps >= maxSteps || errors.length > 0) break;
    const due = clock.nextDue();
    if (due === undefined || due > end) break;
    clock.step();
    steps++;
    await settle();
    contract.acknowledged(world.ackedHead, rel());
    const obs = observe();
    // RangeSets are immutable: a holder whose sets are the same objects as last time is unchanged.
    const changed = obs.holders.filter((h) => {
      const p = lastHolders.get(h.id);
      return (
        p === undefined ||
        p.ram !== h.ram ||
        p.disk !== h.disk ||
        p.released !== h.released ||
        p.granted !== h.granted ||
        p.ledger !== h.ledger
      );
    });
    if (changed.length > 0) lastHolders = new Map([...lastHolders, ...changed.map((h) => [h.id, h] as const)]);
    const changedObs = { ...obs, holders: changed };
    fail([
      ...checkReceipts(obs),
      ...checkReleased(changedObs),
      ...checkCredits(obs),
      ...checkReleasesCommitted(changedObs),
      ...checkHolds(changedObs),
      ...(leases ? await leases.check(rel()) : []),
    ]);
  }
  await started;
  const controller = await world.controllerFootprint();
  await world.stop();
  await settle();
  return {
    seed,
    spec,
    steps,
    virtualMs: rel(),
    traceHash: trace.digest(),
    traceEvents: trace.count,
    trace: trace.events,
    violation,
    violationStep,
    writes: world.acked.count,
    grants,
    strikesChecked: contract.strikesChecked,
    recovery: contract.recovery(spec.timing.durationMs),
    scheduleShape: scheduleShape(spec.faults),
    scheduleKey: scheduleKey(spec.faults),
    counters: {
      ...net.counters.snapshot(),
      ...world.counters.snapshot(),
      ...(leases ? Object.fromEntries(Object.entries(leases.figures()).map(([k, v]) => [`lease_${k}`, v])) : {}),
    },
    errors,
    ...(controller !== undefined ? { controller } : {}),
  };
}
