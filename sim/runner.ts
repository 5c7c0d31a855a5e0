import { changedSince } from "./changed-holders.ts";
import { authorizeReleases, type Scenario } from "../policies/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { EventTrace, type TraceEvent } from "./event-trace.ts";
import { ContractTally, type RecoveryTally } from "./contract-tally.ts";
import { FaultKind, scheduleKey, scheduleShape, type FaultEvent } from "./fault-schedule.ts";
import {
  checkCredits,
  checkReceipts,
  checkReleaseCoverage,
  checkReleased,
  checkStrike,
  InvariantId,
  type CreditTruth,
  type ReceiptTruth,
  type Violation,
  type WorldObservation,
} from "./invariants.ts";
import { ModelController, type ReleaseAuthorizer } from "./model-controller.ts";
import { ModelHolder } from "./model-holder.ts";
import { SimulatedClock } from "./simulated-clock.ts";
import type { SimNetwork } from "./sim-network.ts";
import { buildWorld, networkFor, overridesOf, runRandom, type WorldSpec } from "./world.ts";

/** Options of one run. */
export interface RunOptions {
  /** Number of holders (1–10); default: drawn from the seed. */
  holders?: number;
  /** Stop after this many clock steps (default 200 000). */
  steps?: number;
  /** Virtual duration (default 30 s). */
  durationMs?: number;
  /** Replace the seed's fault schedule (the minimizer uses this). */
  faults?: readonly FaultEvent[];
  /**
   * The release decision function. Production code and the CLI always use `authorizeReleases`;
   * only tests pass a replacement (e.g. a deliberately weakened one, to prove the checks can fail).
   */
  authorize?: ReleaseAuthorizer;
  /** Invariants to check (default: all). */
  checks?: readonly InvariantId[];
  /**
   * A standby controller beside the active one, sharing the volume through the control lease; the
   * faults then also pause the active one (production actors only; the pure model treats a pause as a loss).
   */
  failover?: boolean;
}

/** Summary of one run. */
export interface RunResult {
  readonly seed: number;
  readonly spec: WorldSpec;
  readonly steps: number;
  readonly virtualMs: number;
  readonly traceHash: string;
  readonly traceEvents: number;
  readonly trace: readonly TraceEvent[];
  readonly violation: Violation | undefined;
  /** Step index at which the violation was found. */
  readonly violationStep: number | undefined;
  readonly writes: number;
  readonly grants: number;
  /** Strikes checked against a confirmed cut (within the contract). */
  readonly strikesChecked: number;
  /**
   * Liveness, measured but not asserted: after each strike, did every required scenario's
   * confirmed cut again reach the writes acknowledged at the strike, within the repair budget?
   */
  readonly recovery: RecoveryTally;
  readonly scheduleShape: string;
  readonly scheduleKey: string;
  readonly counters: Readonly<Record<string, number>>;
  /** Unexpected failures inside actors (bugs); a run stops at the first. */
  readonly errors?: readonly string[];
  /** The production controller's memory footprint at the end (actor worlds only). */
  readonly controller?: {
    readonly audits: number;
    readonly releasesCommitted: number;
    readonly commitRuns: number;
    readonly releaseEntries: number;
  };
}

const ALL_CHECKS = Object.values(InvariantId);

/** The model's writer (first) and holders, each knowing its upstream and downstream. */
function modelHolders(
  spec: WorldSpec,
  clock: SimulatedClock,
  net: SimNetwork,
  trace: EventTrace,
  observer: ConstructorParameters<typeof ModelHolder>[4],
): ModelHolder[] {
  const upstreamOf = (id: string) =>
    [spec.writer, ...spec.holders].filter((h) => h.downstream.includes(id)).map((h) => h.id);
  const common = {
    creditWindow: spec.timing.creditWindow,
    receiptMs: spec.timing.receiptMs,
    retryMs: spec.timing.retryMs,
    flushMs: spec.timing.flushMs,
    restartMs: spec.timing.restartMs,
  };
  const writer = new ModelHolder(
    {
      ...common,
      id: spec.writer.id,
      site: spec.writer.site,
      disk: true,
      protectedRam: false,
      downstream: spec.writer.downstream,
      upstream: [],
      writer: { intervalMs: spec.workload.intervalMs },
    },
    clock,
    net,
    trace,
    observer,
  );
  return [
    writer,
    ...spec.holders.map(
      (h) =>
        new ModelHolder(
          {
            ...common,
            id: h.id,
            site: h.site,
            disk: h.disk,
            protectedRam: h.protectedRam,
            downstream: h.downstream,
            upstream: upstreamOf(h.id),
          },
          clock,
          net,
          trace,
          observer,
        ),
    ),
  ];
}

/** Site → the kind of loss `scenario` deals it (a destruction wins over any other loss of the site). */
function siteHits(sites: WorldSpec["sites"], scenario: Scenario): Map<string, string> {
  const siteHit = new Map<string, string>();
  for (const s of sites) {
    for (const l of scenario.losses) {
      const d = l.domain;
      if (
        d === `site:${s.id}` ||
        d === `region:${s.region}` ||
        d === `az:${s.az}` ||
        d === `host:${s.host}` ||
        s.deps.includes(d)
      ) {
        const prev = siteHit.get(s.id);
        if (prev !== "site_destruction") siteHit.set(s.id, l.kind);
      }
    }
  }
  return siteHit;
}

/** Every live sender→receiver edge: units sent in its incarnation against the most credit granted. */
function creditTruths(holders: readonly ModelHolder[], grantsIssued: ReadonlyMap<string, number>): CreditTruth[] {
  const credits: CreditTruth[] = [];
  for (const h of holders) {
    for (const [to, d] of h.down) {
      if (d.inc === 0) continue;
      credits.push({
        sender: h.id,
        receiver: to,
        inc: d.inc,
        sent: d.sent.count,
        maxGranted: grantsIssued.get(`${h.id}>${to}#${d.inc}`) ?? 0,
      });
    }
  }
  return credits;
}

/** What each holder has, has released, and what the controller's ledger and grants say of it. */
function holderTruths(holders: readonly ModelHolder[], controller: ModelController): WorldObservation["holders"] {
  return holders.map((h) => ({
    id: h.id,
    site: h.cfg.site,
    ram: h.ram,
    disk: h.disk,
    ramSurvivesPower: h.cfg.protectedRam && h.evidenceValid,
    released: h.released,
    ledger: controller.ledgerClaims(h.id),
    granted: controller.grantedTo(h.id),
    // The model's controller grants only what it committed: its grants are its log.
    committed: controller.grantedTo(h.id),
  }));
}

/** The model world a run steps, as applying a fault needs it. */
interface ModelRun {
  readonly spec: WorldSpec;
  readonly clock: SimulatedClock;
  readonly net: SimNetwork;
  readonly trace: EventTrace;
  readonly contract: ContractTally;
  readonly writer: ModelHolder;
  /** The writer first, then the holders. */
  readonly holders: readonly ModelHolder[];
  readonly controller: ModelController;
  readonly observe: () => WorldObservation;
  readonly fail: (vs: Violation[]) => void;
  readonly violated: () => boolean;
}

/** Strikes `scenario`: checks the strike invariant first, then fails every holder on a site it hits. */
function strikeModel(run: ModelRun, scenario: Scenario): void {
  const { spec, clock, trace, contract, holders, controller, observe, fail } = run;
  const obs = observe();
  const confirmed = contract.confirmedAtStrike(scenario.name);
  trace.record({
    atMs: clock.now(),
    kind: "strike",
    actor: "world",
    detail: { scenario: scenario.name, confirmed: confirmed ?? null },
  });
  fail(checkStrike(obs, spec.sites, scenario, confirmed));
  if (run.violated()) return; // the run ends here; the trace ends with the violation
  const siteHit = siteHits(spec.sites, scenario);
  for (const h of holders) {
    const kind = siteHit.get(h.cfg.site);
    if (kind === undefined || kind === "partition") continue;
    const destroy = kind === "site_destruction";
    h.fail(destroy);
    if (destroy) clock.schedule(() => controller.declareLost(h.id), 1_000, "declare");
  }
}

/** Applies fault `f` at its time, telling the contract tally before and after. */
function applyModelFault(run: ModelRun, f: FaultEvent): void {
  const { spec, clock, net, trace, contract, writer, controller } = run;
  if (f.kind === FaultKind.strike) contract.struck(clock.now(), f.scenario, writer.nextSeq - 1);
  contract.faultStarting(f, clock.now());
  switch (f.kind) {
    case FaultKind.strike: {
      const s = spec.scenarios.find((x) => x.name === f.scenario);
      if (s) strikeModel(run, s);
      break;
    }
    case FaultKind.evidenceDegrade:
      run.holders.find((h) => h.id === f.holder)?.degradeEvidence();
      break;
    case FaultKind.controllerLoss:
    case FaultKind.controllerPause:
      controller.lose(f.durationMs);
      break;
    case FaultKind.partition: {
      const id = net.partition(f.a, f.b);
      trace.record({
        atMs: clock.now(),
        kind: "partition",
        actor: "world",
        detail: { a: f.a, b: f.b, durationMs: f.durationMs },
      });
      clock.schedule(
        () => {
          net.heal(id);
          trace.record({ atMs: clock.now(), kind: "heal", actor: "world", detail: { a: f.a, b: f.b } });
        },
        f.durationMs,
        "heal",
      );
      break;
    }
    case FaultKind.hold:
      break; // the model has no control log to hold ranges in
  }
  contract.faultApplied(f);
}

/** The run's report, once it stopped stepping. */
function modelResult(
  run: ModelRun,
  t: Pick<RunResult, "seed" | "steps" | "violation" | "violationStep" | "grants">,
): RunResult {
  const { spec, clock, net, trace, contract, writer, controller } = run;
  return {
    seed: t.seed,
    spec,
    steps: t.steps,
    virtualMs: clock.now(),
    traceHash: trace.digest(),
    traceEvents: trace.count,
    trace: trace.events,
    violation: t.violation,
    violationStep: t.violationStep,
    writes: writer.nextSeq,
    grants: t.grants,
    strikesChecked: contract.strikesChecked,
    recovery: contract.recovery(spec.timing.durationMs),
    scheduleShape: scheduleShape(spec.faults),
    scheduleKey: scheduleKey(spec.faults),
    counters: {
      ...net.counters.snapshot(),
      ...Object.fromEntries(Object.entries(controller.counters.snapshot()).map(([k, v]) => [`ctrl_${k}`, v])),
    },
  };
}

/** What a run accumulates while it steps. */
interface ModelTally {
  steps: number;
  grants: number;
  violation: Violation | undefined;
  /** Step index at which the violation was found. */
  violationStep: number | undefined;
}

/** Keeps the run's first violation among the checked invariants (and traces it). */
function recordModelViolation(tally: ModelTally, vs: Violation[], checks: ReadonlySet<string>, trace: EventTrace) {
  const v = vs.find((x) => checks.has(x.invariant));
  if (v !== undefined && tally.violation === undefined) {
    tally.violation = v;
    tally.violationStep = tally.steps;
    trace.record({ atMs: v.atMs, kind: "VIOLATION", actor: v.invariant, detail: { message: v.message } });
  }
}

/** Steps the clock to the world's end (or the first violation, or `maxSteps`), checking after each step. */
function stepToEnd(run: ModelRun, tally: ModelTally, maxSteps: number): void {
  const { spec, clock, observe, fail } = run;
  const lastChecked = new Map<string, WorldObservation["holders"][number]>();
  while (tally.violation === undefined && tally.steps < maxSteps) {
    const due = clock.nextDue();
    if (due === undefined || due > spec.timing.durationMs) break;
    clock.step();
    tally.steps++;
    const obs = observe();
    const changed = changedSince(obs, lastChecked);
    for (const h of changed) lastChecked.set(h.id, h);
    fail([...checkReceipts(obs), ...checkReleased({ ...obs, holders: changed }), ...checkCredits(obs)]);
  }
}

/**
 * Runs the world of `seed` to its end (or the first violation): model writer, holders and
 * controller over a SimNetwork in virtual time, the fault schedule applied on time, and the
 * invariants checked after every step. Deterministic: the same seed and options give the same
 * trace hash.
 */
export function runWorld(seed: number, opts: RunOptions = {}): RunResult {
  const spec = buildWorld(seed, overridesOf(opts));

  const checks = new Set(opts.checks ?? ALL_CHECKS);
  const trace = new EventTrace();
  const clock = new SimulatedClock();
  const net = networkFor(spec, clock, trace);

  // Observer state (outside the actors: what the checks see).
  const grantsIssued = new Map<string, number>();
  let receipts: ReceiptTruth[] = [];
  const tally: ModelTally = { steps: 0, grants: 0, violation: undefined, violationStep: undefined };
  const contract = new ContractTally(spec.timing.settleMs);
  const fail = (vs: Violation[]) => recordModelViolation(tally, vs, checks, trace);

  const observer = {
    grantIssued: (receiver: string, sender: string, inc: number, grant: number) => {
      const k = `${sender}>${receiver}#${inc}`;
      grantsIssued.set(k, Math.max(grantsIssued.get(k) ?? 0, grant));
    },
    receiptSent: (holder: string, claimed: RangeSet, held: RangeSet) => void receipts.push({ holder, claimed, held }),
    overCredit: () => {},
  };
  const holders = modelHolders(spec, clock, net, trace, observer);
  const writer = holders[0]!;

  const observe = (): WorldObservation => {
    const credits = creditTruths(holders, grantsIssued);
    const obs: WorldObservation = {
      atMs: clock.now(),
      holders: holderTruths(holders, controller),
      credits,
      receipts,
      // The model has no control log, so no holds (only the actor world places them).
      holds: [],
    };
    receipts = [];
    return obs;
  };

  const controller = new ModelController(
    spec,
    clock,
    net,
    trace,
    runRandom(spec, "controller"),
    opts.authorize ?? authorizeReleases,
    {
      confirmed: (cuts) => contract.confirmed(cuts, clock.now()),
      granted: (grants) => {
        tally.grants += grants.size;
        if (contract.inContract(clock.now()))
          fail(checkReleaseCoverage(observe(), spec.sites, spec.scenarios, contract.confirmedMax));
      },
    },
  );

  const violated = () => tally.violation !== undefined;
  const run: ModelRun = { spec, clock, net, trace, contract, writer, holders, controller, observe, fail, violated };
  for (const f of spec.faults) clock.schedule(() => applyModelFault(run, f), f.atMs, "fault");
  controller.start();
  for (const h of holders) h.start();
  stepToEnd(run, tally, opts.steps ?? 200_000);
  return modelResult(run, { seed, ...tally });
}
