import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import type { ControlEventBody } from "../../custody/index.ts";
import type { ControlState } from "../../custody/index.ts";
import { runRepair } from "../repair.ts";
import { missingCoverage, type RepairInput } from "../repair/repair-steps.ts";
import { obligationIdOf, type ControllerConfig, type RepairConfig, type StandbyHolder } from "./controller-config.ts";
import type { ControllerCore } from "./controller-core.ts";
import type { ControllerPorts, RepairLauncher } from "./controller-ports.ts";
import { failuresToRepair, repairIdOf, type FailureToRepair } from "./failure-repairs.ts";
import { holdReads, type ReadHolds } from "./read-holds.ts";
import { RepairStatusState, type RepairStatus } from "./status-document.ts";

/** What the runner needs from its controller. */
export interface FailureRepairDeps {
  readonly config: ControllerConfig;
  readonly ports: ControllerPorts;
  readonly counters: Counters;
  /** The newest folded control-log state. */
  controlState(): ControlState;
  /** Commits a control event (fenced, chained, signed when the log is). */
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }>;
  /** The controller the repair task reports to (it admits the replacement and moves custody through it). */
  readonly controller: ControllerCore;
  /** Something changed that the next status document should show. */
  nudge(): void;
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

  constructor(private readonly d: FailureRepairDeps) {}

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
    const entries = this.scannedSeq === 0 ? await store.readAll() : await store.readFrom(this.scannedSeq + 1);
    const upTo = entries.filter((e) => e.seq > this.scannedSeq && e.seq <= s.lastSeq);
    this.scannedSeq = s.lastSeq;
    const obligations = this.d.config.topology.lanes.map((l) => obligationIdOf(this.volume, l));
    const open = failuresToRepair(upTo, s, obligations).filter((f) => !this.recordsBySeq.has(f.seq));
    for (const f of open) {
      if (this.d.config.repair === undefined || this.d.ports.repair === undefined) {
        this.recordsBySeq.set(f.seq, { failureSeq: f.seq, state: RepairStatusState.needed, failed: [...f.failed], reason: "no repair section configured" });
        this.d.counters.inc("repair_needed");
      } else if (!this.pendingFailures.some((p) => p.seq === f.seq)) this.pendingFailures.push(f);
    }
  }

  /** True when the last scan found declared failures whose repair has not been started. */
  get pending(): boolean {
    return this.pendingFailures.length > 0;
  }

  /**
   * Starts one repair task per pending declared failure (once per control-log sequence), with the
   * first standby holder never admitted. Runs in the background; its outcome lands in `records`.
   * Never throws.
   */
  start(): void {
    const cfg = this.d.config.repair;
    const launcher = this.d.ports.repair;
    for (const f of this.pendingFailures.splice(0)) {
      if (this.recordsBySeq.has(f.seq) || cfg === undefined || launcher === undefined) continue;
      const taken = new Set([...this.recordsBySeq.values()].map((r) => r.replacement));
      const standby = cfg.standby.find((c) => this.d.controlState().holders[c.holderId] === undefined && !taken.has(c.holderId));
      if (standby === undefined) {
        this.recordsBySeq.set(f.seq, { failureSeq: f.seq, state: RepairStatusState.needed, failed: [...f.failed], reason: "no unused standby holder" });
        this.d.counters.inc("repair_needed");
        this.d.nudge();
        continue;
      }
      this.recordsBySeq.set(f.seq, { failureSeq: f.seq, state: RepairStatusState.running, failed: [...f.failed], replacement: standby.holderId });
      this.d.counters.inc("repair_started");
      void this.repairOne(f, standby, cfg, launcher);
    }
  }

  private async repairOne(f: FailureToRepair, standby: StandbyHolder, cfg: RepairConfig, launcher: RepairLauncher): Promise<void> {
    // Repair shares its links with surviving traffic: measured bandwidth less measured load, where fresh.
    const bw = this.d.controller.routes.repairBandwidth(this.d.controller.currentState(), standby.site, cfg.bandwidthBytesPerSec);
    const base = { failureSeq: f.seq, failed: [...f.failed], replacement: standby.holderId, bandwidthBytesPerSec: bw.bytesPerSec, bandwidthSource: bw.source };
    let reads: ReadHolds | undefined;
    try {
      const replacement = await launcher.prepare(standby);
      const input: RepairInput = {
        repairId: repairIdOf(this.volume, f.seq),
        volume: this.volume,
        lanes: this.d.config.topology.lanes,
        failed: f.failed,
        replacement,
        controller: this.d.controller,
        transport: this.d.ports.transport,
        clock: this.d.ports.clock,
        repairBandwidthBytesPerSec: bw.bytesPerSec,
        receiptTimeoutMs: cfg.receiptTimeoutMs,
      };
      // What the repair reads is held in the control log too (not only in this controller's memory).
      reads = await holdReads((b) => this.d.commit(b), this.d.ports.clock, { id: input.repairId, volume: this.volume, ranges: missingCoverage(input), leaseMs: cfg.readLeaseMs ?? 600_000, by: `repair of failure ${f.seq}` });
      const report = await runRepair(input);
      const est = report.estimate.totalSec;
      this.recordsBySeq.set(f.seq, { ...base, state: RepairStatusState.done, measuredMs: report.measuredMs, estimateMs: Number.isFinite(est) ? est * 1000 : null, copiedBytes: report.copiedBytes });
      this.d.counters.inc("repair_completed");
    } catch (err) {
      this.recordsBySeq.set(f.seq, { ...base, state: RepairStatusState.failed, reason: err instanceof Error ? err.message.slice(0, 512) : String(err).slice(0, 512) });
      this.d.counters.inc(`repair_${err instanceof CustodyError ? err.code : "failed"}`);
    }
    await reads?.end("repair finished");
    this.d.nudge();
  }

  /** Every declared failure seen and what became of its repair, by sequence. */
  get records(): RepairStatus[] {
    return [...this.recordsBySeq.values()].sort((a, b) => a.failureSeq - b.failureSeq);
  }
}
