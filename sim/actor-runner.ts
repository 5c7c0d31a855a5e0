import { changedSince } from "./changed-holders.ts";
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
import type { RunOptions, RunResult } from "./run-options.ts";
import { SimulatedClock } from "./simulated-clock.ts";
import { LeaseAudit } from "./lease-audit.ts";
import { buildWorld, networkFor, overridesOf, runRandom, type WorldSpec } from "./world.ts";
import type { SimNetwork } from "./sim-network.ts";

const ALL_CHECKS = Object.values(InvariantId);

/** Lets every promise chain the last timer started run to its end (no real I/O is involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What applying a fault touches: the run's world, network, clock, trace and contract tally. */
interface FaultContext {
  readonly spec: WorldSpec;
  readonly world: ActorWorld;
  readonly net: SimNetwork;
  readonly clock: SimulatedClock;
  readonly trace: EventTrace;
  readonly contract: ContractTally;
  /** Virtual ms since the run's epoch. */
  readonly rel: () => number;
  readonly observe: () => WorldObservation;
  readonly fail: (vs: Violation[]) => void;
  readonly violated: () => boolean;
}

/** Applies fault `f` (the `index`th of the schedule) at its time, telling the contract tally before and after. */
function applyFaultTo(ctx: FaultContext, f: FaultEvent, index: number): void {
  const { spec, world, net, clock, trace, contract, rel, observe, fail } = ctx;
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
      if (ctx.violated()) return;
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
}

/** An actor's error as the run records it: its code (else its class) and message. */
function errorText(err: unknown): string {
  return err instanceof Error ? `${(err as { code?: string }).code ?? err.name}: ${err.message}` : String(err);
}

/** The invariants checked after every step; the per-holder ones only over the holders that changed. */
function stepViolations(obs: WorldObservation, changed: WorldObservation["holders"]): Violation[] {
  const changedObs = { ...obs, holders: changed };
  return [
    ...checkReceipts(obs),
    ...checkReleased(changedObs),
    ...checkCredits(obs),
    ...checkReleasesCommitted(changedObs),
    ...checkHolds(changedObs),
  ];
}

/** The lease audit's figures as counters (`lease_<name>`); none without failover. */
function leaseCounters(leases: LeaseAudit | undefined): Record<string, number> {
  return leases ? Object.fromEntries(Object.entries(leases.figures()).map(([k, v]) => [`lease_${k}`, v])) : {};
}

/** What a run accumulates while it steps. */
interface RunTally {
  steps: number;
  grants: number;
  violation: Violation | undefined;
  /** Step index at which the violation was found. */
  violationStep: number | undefined;
  readonly errors: string[];
}

/** Keeps the run's first violation among the checked invariants (and traces it). */
function recordViolation(
  tally: RunTally,
  vs: Violation[],
  checks: ReadonlySet<string>,
  trace: EventTrace,
  atMs: number,
) {
  const v = vs.find((x) => checks.has(x.invariant));
  if (v !== undefined && tally.violation === undefined) {
    tally.violation = { ...v, atMs };
    tally.violationStep = tally.steps;
    trace.record({ atMs, kind: "VIOLATION", actor: v.invariant, detail: { message: v.message } });
  }
}

/**
 * What the actors tell the run: confirmed cuts go to the contract tally, each grant is checked
 * against the release coverage while in contract, and errors are counted and traced.
 */
function worldHooks(
  spec: WorldSpec,
  tally: RunTally,
  contract: ContractTally,
  trace: EventTrace,
  rel: () => number,
  observe: () => WorldObservation,
  fail: (vs: Violation[]) => void,
): ConstructorParameters<typeof ActorWorld>[5] {
  return {
    confirmed: (cuts) => contract.confirmed(cuts, rel()),
    granted: () => {
      tally.grants++;
      if (contract.inContract(rel()))
        fail(checkReleaseCoverage(observe(), spec.sites, spec.scenarios, contract.confirmedMax));
    },
    error: (where, err) => {
      const text = `${where}: ${errorText(err)}`;
      tally.errors.push(text);
      trace.record({ atMs: rel(), kind: "error", actor: where, detail: { text } });
    },
  };
}

/** Stops the world and reports the run. */
async function finishRun(
  run: {
    seed: number;
    spec: WorldSpec;
    world: ActorWorld;
    net: SimNetwork;
    trace: EventTrace;
    contract: ContractTally;
    leases: LeaseAudit | undefined;
    virtualMs: () => number;
  },
  tally: RunTally,
): Promise<RunResult> {
  const { seed, spec, world, net, trace, contract, leases } = run;
  const controller = await world.controllerFootprint();
  await world.stop();
  await settle();
  return {
    seed,
    spec,
    steps: tally.steps,
    virtualMs: run.virtualMs(),
    traceHash: trace.digest(),
    traceEvents: trace.count,
    trace: trace.events,
    violation: tally.violation,
    violationStep: tally.violationStep,
    writes: world.acked.count,
    grants: tally.grants,
    strikesChecked: contract.strikesChecked,
    recovery: contract.recovery(spec.timing.durationMs),
    scheduleShape: scheduleShape(spec.faults),
    scheduleKey: scheduleKey(spec.faults),
    counters: { ...net.counters.snapshot(), ...world.counters.snapshot(), ...leaseCounters(leases) },
    errors: tally.errors,
    ...(controller !== undefined ? { controller } : {}),
  };
}

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

  const tally: RunTally = { steps: 0, grants: 0, violation: undefined, violationStep: undefined, errors: [] };
  const contract = new ContractTally(spec.timing.settleMs);
  const fail = (vs: Violation[]) => recordViolation(tally, vs, checks, trace, rel());
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
    worldHooks(spec, tally, contract, trace, rel, observe, fail),
    { ...(opts.authorize ? { authorizeReleases: opts.authorize } : {}) },
  );

  const faults: FaultContext = {
    spec,
    world,
    net,
    clock,
    trace,
    contract,
    rel,
    observe,
    fail,
    violated: () => tally.violation !== undefined,
  };
  spec.faults.forEach((f, i) => clock.schedule(() => applyFaultTo(faults, f, i), f.atMs, "fault"));
  // With failover, the control log is audited for its leases after every step (sim/lease-audit.ts).
  const leases = spec.failover === true ? new LeaseAudit(world.store) : undefined;

  const started = world.start().catch((err) => tally.errors.push(`start: ${String(err)}`));
  let lastHolders = new Map<string, WorldObservation["holders"][number]>();
  const end = SIM_EPOCH_MS + spec.timing.durationMs;
  await settle(); // the start runs as far as it can before the first timer
  for (;;) {
    if (tally.violation !== undefined || tally.steps >= maxSteps || tally.errors.length > 0) break;
    const due = clock.nextDue();
    if (due === undefined || due > end) break;
    clock.step();
    tally.steps++;
    await settle();
    contract.acknowledged(world.ackedHead, rel());
    const obs = observe();
    const changed = changedSince(obs, lastHolders);
    if (changed.length > 0) lastHolders = new Map([...lastHolders, ...changed.map((h) => [h.id, h] as const)]);
    fail([...stepViolations(obs, changed), ...(leases ? await leases.check(rel()) : [])]);
  }
  await started;
  return finishRun({ seed, spec, world, net, trace, contract, leases, virtualMs: rel }, tally);
}
