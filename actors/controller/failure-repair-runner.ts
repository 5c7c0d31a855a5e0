import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import type { RangeSet } from "../../lanes/index.ts";
import type { ControlEventBody } from "../../custody/index.ts";
import type { ControlState } from "../../custody/index.ts";
import type { RepairOutcome } from "../repair/index.ts";
import { reportOf } from "../repair/index.ts";
import type { RepairPort } from "../repair/index.ts";
import { isReadableEntry } from "../../custody/index.ts";
import type { ValueSource } from "../../policies/index.ts";
import { missingCoverage, type RepairInput } from "../repair/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import type { ControllerConfig, RepairConfig, StandbyHolder } from "./controller-config.ts";
import type { ControllerPorts, RepairLaunch, RepairLauncher } from "./controller-ports.ts";
import { RepairService } from "./repair-service.ts";
import type { InboundMessage, TransportSubscription } from "../../transport/index.ts";
import { failuresToRepair, repairIdOf, type FailureToRepair } from "./failure-repairs.ts";
import { holdReads, type ReadHolds } from "./read-holds.ts";
import { StandbyEnlistment } from "./standby-enlistment.ts";
import { RepairStatusState, type RepairStatus } from "../../transport/protocol/index.ts";

/** What the runner needs from its controller. */
export interface FailureRepairDeps {
  readonly config: ControllerConfig;
  readonly ports: ControllerPorts;
  readonly counters: Counters;
  /** The newest folded control-log state. */
  controlState(): ControlState;
  /** Commits a control event (fenced, chained, signed when the log is). */
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }>;
  /** How the controller's own (in-process) repairs read its state and commit through it. */
  readonly port: RepairPort;
  /** Hands a prepared repair to the controller machine, which starts it as a child actor. */
  launch(repair: RepairLaunch): void;
  /** Bandwidth a repair to `site` gets: measured less the survivors' load where fresh (controller-routes.ts). */
  repairBandwidth(site: string, configured: number): { bytesPerSec: number; source: ValueSource };
  /** Something changed that the next status document should show. */
  nudge(): void;
}

/** A launched repair the runner waits to hear back from. */
interface Running {
  readonly failureSeq: number;
  readonly base: Pick<RepairStatus, "failureSeq" | "failed" | "replacement">;
  readonly reads: ReadHolds;
  readonly remote: boolean;
}

/**
 * The controller's repairs of declared failures: it scans the control log for `declare_failure`
 * events on its volume (each handled once, by log sequence), starts one repair task per failure
 * with the first standby holder never admitted, holds what the repair reads in the control log
 * while it reads, and records the outcome (measured time next to the estimate) for status.
 */
export class FailureRepairRunner {
  /** Control-log sequence through which declare-failure events have been scanned. */
  private scannedSeq = 0;
  /** Failures seen by the last scan that have no repair record yet (launched by `start`). */
  private pendingFailures: FailureToRepair[] = [];
  /** Repair records keyed by the declare-failure sequence: each failure is handled once. */
  private readonly recordsBySeq = new Map<number, RepairStatus>();
  /** Launched repairs by repair id, until their outcome arrives (`settle`). */
  private readonly running = new Map<string, Running>();

  /** Answers the requests of repairs handed to a worker (`config.repair.worker: "remote"`). */
  private readonly service: RepairService;

  /** Standbys brought in for coverage gaps no admitted holder can take. */
  private readonly enlistment: StandbyEnlistment;

  constructor(private readonly d: FailureRepairDeps) {
    this.service = new RepairService({
      volume: d.config.topology.volume,
      transport: d.ports.transport,
      port: d.port,
    });
    this.enlistment = new StandbyEnlistment(
      { ...d, launcher: d.ports.repair, clock: d.ports.clock, taken: () => this.taken() },
      d.config.coverageRepair?.retryMs ?? 2_000,
    );
  }

  /** Standbys a repair has taken as its replacement. */
  private taken(): Set<string> {
    return new Set(
      [...this.recordsBySeq.values()].flatMap((r) => (r.replacement === undefined ? [] : [r.replacement])),
    );
  }

  /**
   * A required coverage gap has no admitted holder to copy to: bring in a standby at a site `survives` accepts (see
   * StandbyEnlistment).
   */
  enlist(lane: string, gap: RangeSet, survives: (site: string) => boolean): void {
    this.enlistment.enlist(lane, gap, survives);
  }

  /** Subscribes the repair requests when repairs are handed to workers (none otherwise). */
  subscribe(deliver: (msg: InboundMessage) => void): TransportSubscription[] {
    return this.d.config.repair?.worker === "remote" ? [this.service.subscribe(deliver)] : [];
  }

  /** Does what one repair request asks and returns its encoded answer (see RepairService.answer). */
  answer(op: string, data: Uint8Array): Promise<Uint8Array> {
    return this.service.answer(op, data);
  }

  private get volume(): string {
    return this.d.config.topology.volume;
  }

  /**
   * Reads the control-log entries committed since the last scan (up to `s`) and notes the
   * declare-failure events that still need a repair. The first scan (also after a restart) reads
   * the whole log, so a failure whose repair already completed (a later activate_replacement) is
   * never repaired again.
   */
  async scan(s: ControlState): Promise<void> {
    if (s.lastSeq <= this.scannedSeq) return;
    const store = this.d.ports.store;
    // Unreadable entries (junk the trusted fold skipped) hold no failure to repair.
    const entries = (await store.readRecordsFrom(this.scannedSeq + 1)).filter(isReadableEntry);
    const upTo = entries.filter((e) => e.seq > this.scannedSeq && e.seq <= s.lastSeq);
    this.scannedSeq = s.lastSeq;
    const obligations = this.d.config.topology.lanes.map((l) => obligationIdOf(this.volume, l));
    const open = failuresToRepair(upTo, s, obligations).filter((f) => !this.recordsBySeq.has(f.seq));
    for (const f of open) {
      if (this.d.config.repair === undefined || this.d.ports.repair === undefined) {
        this.recordsBySeq.set(f.seq, {
          failureSeq: f.seq,
          state: RepairStatusState.needed,
          failed: [...f.failed],
          reason: "no repair section configured",
        });
        this.d.counters.inc("repair_needed");
      } else if (!this.pendingFailures.some((p) => p.seq === f.seq)) this.pendingFailures.push(f);
    }
  }

  /**
   * Starts one repair task per pending declared failure (once per control-log sequence), with the
   * first standby holder never admitted. Runs in the background; its outcome lands in `records`.
   * Never throws.
   */
  start(): void {
    this.enlistment.resume();
    const cfg = this.d.config.repair;
    const launcher = this.d.ports.repair;
    for (const f of this.pendingFailures.splice(0)) {
      if (this.recordsBySeq.has(f.seq) || cfg === undefined || launcher === undefined) continue;
      const taken = new Set([...this.taken(), ...this.enlistment.reserved]);
      const standby = cfg.standby.find(
        (c) => this.d.controlState().holders[c.holderId] === undefined && !taken.has(c.holderId),
      );
      if (standby === undefined) {
        this.recordsBySeq.set(f.seq, {
          failureSeq: f.seq,
          state: RepairStatusState.needed,
          failed: [...f.failed],
          reason: "no unused standby holder",
        });
        this.d.counters.inc("repair_needed");
        this.d.nudge();
        continue;
      }
      this.recordsBySeq.set(f.seq, {
        failureSeq: f.seq,
        state: RepairStatusState.running,
        failed: [...f.failed],
        replacement: standby.holderId,
      });
      this.d.counters.inc("repair_started");
      void this.repairOne(f, standby, cfg, launcher);
    }
  }

  /**
   * Prepares one repair (starts the standby, holds what it will read in the control log) and
   * launches it. Its outcome comes back through `settle`.
   */
  private async repairOne(
    f: FailureToRepair,
    standby: StandbyHolder,
    cfg: RepairConfig,
    launcher: RepairLauncher,
  ): Promise<void> {
    // Repair shares its links with surviving traffic: measured bandwidth less measured load, where fresh.
    const bw = this.d.repairBandwidth(standby.site, cfg.bandwidthBytesPerSec);
    const base = {
      failureSeq: f.seq,
      failed: [...f.failed],
      replacement: standby.holderId,
      bandwidthBytesPerSec: bw.bytesPerSec,
      bandwidthSource: bw.source,
    };
    let reads: ReadHolds | undefined;
    try {
      const replacement = await launcher.prepare(standby);
      const input: RepairInput = {
        repairId: repairIdOf(this.volume, f.seq),
        volume: this.volume,
        lanes: this.d.config.topology.lanes,
        failed: f.failed,
        replacement,
        port: this.d.port,
        transport: this.d.ports.transport,
        clock: this.d.ports.clock,
        repairBandwidthBytesPerSec: bw.bytesPerSec,
        receiptTimeoutMs: cfg.receiptTimeoutMs,
      };
      const missing = missingCoverage(await this.d.port.view(input.lanes), input);
      // What the repair reads is held in the control log too (not only in this controller's memory).
      reads = await holdReads((b) => this.d.commit(b), this.d.ports.clock, {
        id: input.repairId,
        volume: this.volume,
        ranges: missing,
        leaseMs: cfg.readLeaseMs ?? 600_000,
        by: `repair of failure ${f.seq}`,
      });
      const remote = cfg.worker === "remote";
      this.running.set(input.repairId, { failureSeq: f.seq, base, reads, remote });
      if (remote)
        this.service.openRepair({ repairId: input.repairId, lanes: input.lanes, failed: input.failed, replacement });
      this.d.launch({ input, remote, workerTimeoutMs: cfg.workerTimeoutMs ?? 600_000 });
    } catch (err) {
      this.recordFailure(base, err);
      await reads?.end("repair finished");
      this.d.nudge();
    }
  }

  /** A launched repair ended (its child actor's output): records it and ends its read hold. */
  async settle(outcome: RepairOutcome): Promise<void> {
    const r = this.running.get(outcome.repairId);
    if (r === undefined) return;
    this.running.delete(outcome.repairId);
    if (r.remote) this.service.closeRepair(outcome.repairId);
    try {
      const report = reportOf(outcome);
      const est = report.estimate.totalSec;
      this.recordsBySeq.set(r.failureSeq, {
        ...r.base,
        state: RepairStatusState.done,
        measuredMs: report.measuredMs,
        estimateMs: Number.isFinite(est) ? est * 1000 : null,
        copiedBytes: report.copiedBytes,
      });
      this.d.counters.inc("repair_completed");
    } catch (err) {
      this.recordFailure(r.base, err);
    }
    await r.reads.end("repair finished");
    this.d.nudge();
  }

  private recordFailure(base: Running["base"], err: unknown): void {
    this.recordsBySeq.set(base.failureSeq, {
      ...base,
      state: RepairStatusState.failed,
      reason: err instanceof Error ? err.message.slice(0, 512) : String(err).slice(0, 512),
    });
    this.d.counters.inc(`repair_${err instanceof CustodyError ? err.code : "failed"}`);
  }

  /** Every declared failure seen and what became of its repair, by sequence. */
  get records(): RepairStatus[] {
    return [...this.recordsBySeq.values()].sort((a, b) => a.failureSeq - b.failureSeq);
  }
}
