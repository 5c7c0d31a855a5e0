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

/**
 * Runs the world of `seed` to its end (or the first violation): model writer, holders and
 * controller over a SimNetwork in virtual time, the fault schedule applied on time, and the
 * invariants checked after every step. Deterministic: the same seed and options give the same
 * trace hash.
 */
export function runWorld(seed: number, opts: RunOptions = {}): RunResult {
  const spec = buildWorld(seed, overridesOf(opts));

  const checks = new Set(opts.checks ?? ALL_CHECKS);
  const maxSteps = opts.steps ?? 200_000;
  const trace = new EventTrace();
  const clock = new SimulatedClock();
  const net = networkFor(spec, clock, trace);

  // Observer state (outside the actors: what the checks see).
  const grantsIssued = new Map<string, number>();
  let receipts: ReceiptTruth[] = [];
  let violation: Violation | undefined;
  let violationStep: number | undefined;
  let steps = 0;
  let grantsCount = 0;
  const contract = new ContractTally(spec.timing.settleMs);
  const fail = (vs: Violation[]) => {
    const v = vs.find((x) => checks.has(x.invariant));
    if (v !== undefined && violation === undefined) {
      violation = v;
      violationStep = steps;
      trace.record({ atMs: v.atMs, kind: "VIOLATION", actor: v.invariant, detail: { message: v.message } });
    }
  };

  const upstreamOf = (id: string) =>
    [spec.writer, ...spec.holders].filter((h) => h.downstream.includes(id)).map((h) => h.id);
  const common = {
    creditWindow: spec.timing.creditWindow,
    receiptMs: spec.timing.receiptMs,
    retryMs: spec.timing.retryMs,
    flushMs: spec.timing.flushMs,
    restartMs: spec.timing.restartMs,
  };
  const observer = {
    grantIssued: (receiver: string, sender: string, inc: number, grant: number) => {
      const k = `${sender}>${receiver}#${inc}`;
      grantsIssued.set(k, Math.max(grantsIssued.get(k) ?? 0, grant));
    },
    receiptSent: (holder: string, claimed: RangeSet, held: RangeSet) => void receipts.push({ holder, claimed, held }),
    overCredit: () => {},
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
  const holders = [
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
  const byId = new Map(holders.map((h) => [h.id, h]));

  const observe = (): WorldObservation => {
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
    const obs: WorldObservation = {
      atMs: clock.now(),
      holders: holders.map((h) => ({
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
      })),
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
        grantsCount += grants.size;
        if (contract.inContract(clock.now()))
          fail(checkReleaseCoverage(observe(), spec.sites, spec.scenarios, contract.confirmedMax));
      },
    },
  );

  const strike = (scenario: Scenario) => {
    const obs = observe();
    const confirmed = contract.confirmedAtStrike(scenario.name);
    trace.record({
      atMs: clock.now(),
      kind: "strike",
      actor: "world",
      detail: { scenario: scenario.name, confirmed: confirmed ?? null },
    });
    fail(checkStrike(obs, spec.sites, scenario, confirmed));
    if (violation !== undefined) return; // the run ends here; the trace ends with the violation
    const siteHit = new Map<string, string>();
    for (const s of spec.sites) {
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
    for (const h of holders) {
      const kind = siteHit.get(h.cfg.site);
      if (kind === undefined || kind === "partition") continue;
      const destroy = kind === "site_destruction";
      h.fail(destroy);
      if (destroy) clock.schedule(() => controller.declareLost(h.id), 1_000, "declare");
    }
  };

  const applyFault = (f: FaultEvent) => {
    if (f.kind === FaultKind.strike) contract.struck(clock.now(), f.scenario, writer.nextSeq - 1);
    contract.faultStarting(f, clock.now());
    switch (f.kind) {
      case FaultKind.strike: {
        const s = spec.scenarios.find((x) => x.name === f.scenario);
        if (s) strike(s);
        break;
      }
      case FaultKind.evidenceDegrade:
        byId.get(f.holder)?.degradeEvidence();
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
  };

  const lastChecked = new Map<string, WorldObservation["holders"][number]>();
  for (const f of spec.faults) clock.schedule(() => applyFault(f), f.atMs, "fault");
  controller.start();
  for (const h of holders) h.start();

  while (violation === undefined && steps < maxSteps) {
    const due = clock.nextDue();
    if (due === undefined || due > spec.timing.durationMs) break;
    clock.step();
    steps++;
    const obs = observe();
    // RangeSets are immutable: a holder whose sets are the same objects as at the last check is
    // unchanged, so re-checking it cannot find anything new.
    const changed = obs.holders.filter((h) => {
      const prev = lastChecked.get(h.id);
      return (
        prev === undefined ||
        prev.ram !== h.ram ||
        prev.disk !== h.disk ||
        prev.released !== h.released ||
        prev.ledger !== h.ledger ||
        prev.granted !== h.granted
      );
    });
    for (const h of changed) lastChecked.set(h.id, h);
    fail([...checkReceipts(obs), ...checkReleased({ ...obs, holders: changed }), ...checkCredits(obs)]);
  }
  return {
    seed,
    spec,
    steps,
    virtualMs: clock.now(),
    traceHash: trace.digest(),
    traceEvents: trace.count,
    trace: trace.events,
    violation,
    violationStep,
    writes: writer.nextSeq,
    grants: grantsCount,
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
