import { createActor, type Actor } from "xstate";
import type { Counters } from "../core/index.ts";
import type { RangeSet } from "../lanes/index.ts";
import { volumeWriterMachine, WriterState } from "./volume-writer.machine.ts";
import { WriterFencedError, type VolumeWriterConfig } from "./writer/writer-config.ts";
import { WriterCore, type VolumeWriterPorts, type WriteAck, type WriterCut } from "./writer/writer-core.ts";

/** A running volume writer: the actor plus the calls an application (or block device) makes. */
export interface VolumeWriter {
  readonly id: string;
  readonly actor: Actor<typeof volumeWriterMachine>;
  readonly config: VolumeWriterConfig;
  /** Current lifecycle state. */
  state(): string;
  readonly counters: Counters;
  /** The newest writer term a holder's receipts told of (0 while none is above this writer's own). */
  newestTerm(): number;
  /** Consistency manifests of recent multi-lane cuts, oldest first. */
  manifests(): readonly WriterCut[];
  /** Per lane, the highest sequence written. */
  heads(): Record<string, number>;
  /** Per lane, the highest sequence whose custody receipts prove `contract`. */
  protectedThrough(contract: string, lane: string): number;
  /** Sequences of `lane` the writer still keeps (not yet confirmed by the controller or released). */
  retainedSeqs(lane: string): RangeSet;
  /** Retained sequences of `lane` the first hop `holder` still needs (not receipted, not released there). */
  owedTo(lane: string, holder: string): RangeSet;
  /** Sequences written but not yet confirmed for every required scenario, worst lane. */
  custodyLagSeqs(): number;
  /** Bytes custody has not yet taken (the backpressure figure). */
  custodyBacklogBytes(): number;
  /** Resolves once custody took everything (empty), or with what is still retained at `deadlineMs`. */
  drained(deadlineMs: number): Promise<Record<string, RangeSet>>;
  /** Writes whole blocks; resolves on local admission. Throws WriterFencedError once fenced. */
  write(lba: number, data: Uint8Array): Promise<WriteAck>;
  /**
   * Local sync (SyncCache) without `contract`; with it, also waits for receipts proving the
   * contract for everything written before the call.
   */
  sync(contract?: string, timeoutMs?: number): Promise<{ durableLsn: number; heads: Record<string, number> }>;
  /** A newer term took over: stop admitting writes. */
  fence(newTerm: number): void;
  /** Stops the actor (the volume itself stays open; its owner closes it). */
  stop(): void;
}

/**
 * Starts a volume writer. Throws WriterConfigError for a bad configuration. The data key in
 * `ports` must come from the volume's key authority; it never leaves this process.
 */
export function startVolumeWriter(config: VolumeWriterConfig, ports: VolumeWriterPorts): VolumeWriter {
  let actor: Actor<typeof volumeWriterMachine> | undefined;
  const core = new WriterCore(config, ports, (e) => actor?.send(e));
  actor = createActor(volumeWriterMachine, { input: { core }, clock: ports.clock });
  actor.start();
  const a = actor;
  // A stopped actor takes no events: a call after stop is refused here, as the stopped state would.
  const refuseIfStopped = () => {
    if (a.getSnapshot().status !== "active") {
      core.counters.inc("writer_fenced");
      throw new WriterFencedError({ term: config.term, state: a.getSnapshot().value });
    }
  };
  return {
    id: config.writerId,
    actor: a,
    config,
    state: () => String(a.getSnapshot().value),
    counters: core.counters,
    heads: () => core.heads(),
    newestTerm: () => core.newestTerm,
    manifests: () => core.manifests(),
    protectedThrough: (contract, lane) => core.protectedThrough(contract, lane),
    retainedSeqs: (lane) => core.retainedSeqs(lane),
    owedTo: (lane, holder) => core.owedTo(lane, holder),
    custodyLagSeqs: () => core.custodyLagSeqs(),
    custodyBacklogBytes: () => core.custodyBacklogBytes(),
    drained: (deadlineMs) => core.drained(deadlineMs),
    async write(lba, data) {
      refuseIfStopped();
      return new Promise<WriteAck>((resolve, reject) =>
        a.send({ type: "write", lba, data, reply: { resolve, reject } }),
      );
    },
    async sync(contract, timeoutMs) {
      refuseIfStopped();
      return new Promise((resolve, reject) =>
        a.send({ type: "sync", contract, timeoutMs, reply: { resolve, reject } }),
      );
    },
    fence: (newTerm) => a.send({ type: "fence", newTerm }),
    stop: () => {
      if (a.getSnapshot().status === "active") a.send({ type: "stop" });
      a.stop();
    },
  };
}
