import { createActor, waitFor, type Actor } from "xstate";
import type { ArenaReport } from "../../arena/index.ts";
import { CustodyError } from "../../core/index.ts";
import { holderLaneKey, type Counters } from "../../core/index.ts";
import type { RangeSet, TransportUnit } from "../../lanes/index.ts";
import type { ReceiverWindow } from "../hop/index.ts";
import type { LaneLogView } from "../lane-arena/index.ts";
import type { HolderLane, LaneArenaRef } from "./holder-lane.ts";
import type { KeptManifest } from "./lane-manifests.ts";
import { holderMachine, HolderState } from "./holder.machine.ts";
import { holderExecutor } from "./holder-executor.ts";
import { parseHolderConfig, type HolderConfigInput, type ProtectedRamEvidence } from "./holder-config.ts";
import type { HolderPorts } from "./holder-ports.ts";
import { claimIncarnation } from "./incarnation.ts";
import type { HandoverReport } from "./holder-handover.ts";

/**
 * Runtime wiring of one holder: validates the configuration, creates the actor with the clock
 * seam, and resolves once it serves (subscriptions live, initial credits granted).
 */
export interface Holder {
  readonly id: string;
  /** The incarnation this start claimed. */
  readonly incarnation: number;
  readonly actor: Actor<typeof holderMachine>;
  readonly counters: Counters;
  /** Current lifecycle state. */
  state(): string;
  /** The newer incarnation that fenced this one (the holder then serves nothing), else undefined. */
  fencedBy(): number | undefined;
  /** Once fenced and done: what it handed to the newer incarnation (actors/holder/holder-handover.ts). */
  handover(): HandoverReport | undefined;
  /** The lanes it serves, as read-only views (reports, drains, metrics, the simulator's observer). */
  lanes(): HolderLaneView[];
  /** One lane it serves, or undefined. */
  lane(volume: string, lane: string): HolderLaneView | undefined;
  /** True when no lane retains anything (everything it held was released). */
  empty(): boolean;
  /** Whether its protected-RAM evidence holds now (its RAM then counts as protected). */
  protectionOk(): boolean;
  /** Why its RAM does or does not count as protected now (a ProtectionStatus value, "ok" when it does). */
  protectionState(): string;
  /** Bytes in its spill files (0 without a flush policy). */
  spillFileBytes(): number;
  /** New protected-RAM evidence from the host's monitoring. */
  updateEvidence(evidence: ProtectedRamEvidence): void;
  /** Stop promising credit; retire once nothing is retained. */
  drain(): void;
  /** Retire now (tests and shutdown): unsubscribes and closes files. Custody held is not released. */
  stop(): Promise<void>;
}

/** What a holder handle shows of one lane: sequence sets (immutable, the holder's own) and byte figures. */
export interface HolderLaneView {
  readonly volume: string;
  readonly lane: string;
  /** Sequences it keeps custody of, those of them on its disk, and those the control log released. */
  readonly retained: RangeSet;
  readonly diskResident: RangeSet;
  readonly released: RangeSet;
  /** Unit bytes in RAM and on disk. */
  ramBytes(): number;
  diskBytes(): number;
  /** Ingress credit granted to upstream senders and not yet used or returned. */
  creditsOutstanding(): number;
  /** Retained RAM-resident units intersecting `seqs` (copies, safe to keep), in sequence order. */
  ramUnits(seqs: RangeSet): TransportUnit[];
  /** Sequences offered to the transfer neighbor and not yet covered by its receipt. */
  readonly inTransfer: RangeSet;
  /** The lane's acceptance log (retained, received, term...), read-only, read when asked. */
  readonly log: LaneLogView;
  /** The lane's arena accounting now (a fresh value). */
  arenaReport(): ArenaReport;
  /** Credit bytes the lane's arena holds for grants upstream senders have not used yet. */
  arenaCreditBytes(): number;
  /** Times a credit top-up found nothing grantable while a sender wanted more (backpressure). */
  creditsWithheld(): number;
  /** The credit window granted to upstream `sender` (an immutable value), or undefined. */
  creditWindow(sender: string): ReceiverWindow | undefined;
  /** Downstream edges it forwards to (a copy). */
  edges(): string[];
  /** Retained sequences downstream `edge` has not receipted yet. */
  pendingFor(edge: string): RangeSet;
  /** Retained sequences the control log and every edge allow it to release. */
  releasable(): RangeSet;
  /** Consistency manifests kept beside the lane's retained range (a copy), oldest first. */
  manifests(): readonly KeptManifest[];
  /** The lane's arena actor (a child of the holder actor), for reading its id and snapshot only. */
  readonly arenaActor: Pick<LaneArenaRef, "id" | "getSnapshot">;
}

/** A lane's view over the holder's own state: reads it when asked (one small object, no copies). */
class LaneView implements HolderLaneView {
  constructor(private readonly hl: HolderLane) {}
  get volume(): string {
    return this.hl.volume;
  }
  get lane(): string {
    return this.hl.lane;
  }
  get retained(): RangeSet {
    return this.hl.obligations.retained;
  }
  get diskResident(): RangeSet {
    return this.hl.obligations.diskResident;
  }
  get released(): RangeSet {
    return this.hl.obligations.released;
  }
  ramBytes(): number {
    return this.hl.arena.report().ramStoredBytes;
  }
  diskBytes(): number {
    return this.hl.arena.report().diskBytes;
  }
  creditsOutstanding(): number {
    return this.hl.grantor.outstanding;
  }
  ramUnits(seqs: RangeSet): TransportUnit[] {
    return this.hl.ramUnits(seqs).map((x) => x.unit);
  }
  get inTransfer(): RangeSet {
    return this.hl.inTransfer;
  }
  get log(): LaneLogView {
    return this.hl.log;
  }
  arenaReport(): ArenaReport {
    return this.hl.arena.report();
  }
  arenaCreditBytes(): number {
    return this.hl.arena.outstanding(this.hl.volume, this.hl.lane);
  }
  creditsWithheld(): number {
    return this.hl.grantor.withheld;
  }
  creditWindow(sender: string): ReceiverWindow | undefined {
    return this.hl.grantor.windowOf(sender);
  }
  edges(): string[] {
    return this.hl.obligations.edgeIds;
  }
  pendingFor(edge: string): RangeSet {
    return this.hl.obligations.pendingFor(edge);
  }
  releasable(): RangeSet {
    return this.hl.obligations.releasable();
  }
  manifests(): readonly KeptManifest[] {
    return [...this.hl.manifests.entries()];
  }
  get arenaActor(): Pick<LaneArenaRef, "id" | "getSnapshot"> {
    return this.hl.arenaActor;
  }
}

/** Thrown when a holder cannot start (bad config, spill file cannot open, transport closed). */
export class HolderStartError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("holder_start_failed", message, detail);
  }
}

/**
 * Starts a holder. Throws HolderConfigError for a bad configuration and HolderStartError when
 * starting fails; on success the holder is in `serving`.
 */
export async function startHolder(config: HolderConfigInput, ports: HolderPorts): Promise<Holder> {
  const parsed = parseHolderConfig(config);
  let incarnation = parsed.incarnation;
  if (ports.stateDir !== undefined) {
    // A durable claim, above everything this directory and the control log have seen: a restart
    // is always a new incarnation, and a start that would reuse one is refused.
    incarnation = await claimIncarnation(ports.stateDir.files, ports.stateDir.dir, {
      admitted: ports.peers.incarnation(parsed.holderId),
      requested: parsed.incarnation,
    });
  } else if (incarnation === undefined) {
    throw new HolderStartError(`holder ${parsed.holderId} needs a state directory to claim its incarnation`, {
      holderId: parsed.holderId,
    });
  }
  const cfg = { ...parsed, incarnation };
  // The machine holds plain data only; its executor (the lane runtime, the ports) is supplied here.
  const executor = holderExecutor(cfg, ports);
  const machine = holderMachine.provide(executor.implementations);
  const actor = createActor(machine, {
    input: { config: cfg, receiptRefreshMs: ports.receiptRefreshMs },
    clock: ports.clock,
  });
  actor.start();
  const snap = await waitFor(actor, (s) => s.value !== HolderState.Starting);
  if (snap.value === HolderState.Retired) {
    throw new HolderStartError(`holder ${cfg.holderId} failed to start: ${snap.context.startError}`, {
      holderId: cfg.holderId,
    });
  }
  const core = executor.core();
  return {
    id: cfg.holderId,
    incarnation,
    actor,
    counters: executor.counters,
    state: () => String(actor.getSnapshot().value),
    fencedBy: () => actor.getSnapshot().context.fencedBy,
    handover: () => actor.getSnapshot().context.handover,
    lanes: () => [...core.lanes.values()].map((hl) => new LaneView(hl)),
    lane: (volume, lane) => {
      const hl = core.lanes.get(holderLaneKey(volume, lane));
      return hl === undefined ? undefined : new LaneView(hl);
    },
    empty: () => core.empty,
    protectionOk: () => core.protectionOk(),
    protectionState: () => core.protectionState(),
    spillFileBytes: () => core.spillStream?.bytes ?? 0,
    updateEvidence: (evidence) =>
      actor.send({
        type: "evidence.update",
        evidence,
        nowMs: ports.clock.now(),
        ramQueuedBytes: core.ramQueuedBytes(),
      }),
    drain: () => actor.send({ type: "drain" }),
    async stop() {
      if (actor.getSnapshot().status === "active") actor.send({ type: "retire" });
      await core.stop();
      actor.stop();
    },
  };
}
