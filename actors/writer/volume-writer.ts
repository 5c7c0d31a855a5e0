import { createActor, type Actor } from "xstate";
import type { Clock, Counters } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { edgePending } from "../hop/index.ts";
import { volumeWriterMachine } from "./volume-writer.machine.ts";
import { listToArray } from "./chunked-list.ts";
import { WriterFencedError, type VolumeWriterConfig } from "./writer-config.ts";
import { protectedThrough } from "./writer-custody.ts";
import type { SyncOutcome, WriterEffect } from "./writer-effects.ts";
import type { WriteCall, WriterEvent } from "./writer-events.ts";
import { WriterExecutor } from "./writer-executor.ts";
import type { VolumeWriterPorts, WriteAck, WriterCut } from "./writer-ports.ts";
import { custodyBacklogBytes, initialWriterState, laneHeads, type WriterState } from "./writer-state.ts";

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
  sync(contract?: string, timeoutMs?: number): Promise<SyncOutcome>;
  /** A newer term took over: stop admitting writes. */
  fence(newTerm: number): void;
  /** Stops the actor (the volume itself stays open; its owner closes it). */
  stop(): void;
}

/** Sequences written but not yet confirmed for every required scenario, worst raw lane. */
function custodyLag(s: WriterState): number {
  let lag = 0;
  for (const n of s.order) {
    const l = s.lanes[n]!;
    lag = Math.max(lag, l.next - 1 - Math.max(l.confirmed, (l.spec.firstSeq ?? 1) - 1));
  }
  return lag;
}

/** Creates and starts the writer's actor, its executors supplied to the machine. */
function launch(config: VolumeWriterConfig, ports: VolumeWriterPorts) {
  const initial = initialWriterState(config, { hasOutbox: ports.outbox !== undefined });
  let actor: Actor<typeof volumeWriterMachine> | undefined;
  const read = (): WriterState => actor?.getSnapshot().context.state ?? initial;
  // Events for a machine that has stopped are settled by the executor (their callers still get an answer).
  const deliver = (e: WriterEvent) => {
    if (actor !== undefined && actor.getSnapshot().status === "active") actor.send(e);
    else exec.orphaned(e);
  };
  const exec = new WriterExecutor(config, ports, initial, deliver, read);
  const machine = volumeWriterMachine.provide({
    actions: {
      execute: (_, effects) => {
        for (const e of effects as readonly WriterEffect[]) exec.execute(e);
      },
      startPorts: ({ context }) => exec.start(context.state),
      stopPorts: () => exec.stop(),
      sampleResend: () => deliver({ type: "resend.due", nowMs: ports.clock.now(), busy: exec.busy() }),
      sampleProgress: () => deliver({ type: "progress.due", nowMs: ports.clock.now() }),
    },
  });
  actor = createActor(machine, { input: { state: initial }, clock: ports.clock });
  actor.start();
  return { actor, exec, read };
}

/**
 * Starts a volume writer. Throws WriterConfigError for a bad configuration. The data key in
 * `ports` must come from the volume's key authority; it never leaves this process.
 */
export function startVolumeWriter(config: VolumeWriterConfig, ports: VolumeWriterPorts): VolumeWriter {
  const { actor: a, exec, read } = launch(config, ports);
  // A stopped actor takes no events: a call after stop is refused here, as the stopped state would.
  const refuseIfStopped = () => {
    if (a.getSnapshot().status !== "active") {
      exec.counters.inc("writer_fenced");
      throw new WriterFencedError({ term: config.term, state: a.getSnapshot().value });
    }
  };
  // The write calls of one turn reach the machine as one event (one step for a queue depth's worth of
  // writes, not one each); any other call sends them first, so the machine sees calls in call order.
  let calls: WriteCall[] = [];
  const sendWrites = () => {
    if (calls.length === 0) return;
    const writes = calls;
    calls = [];
    const e: WriterEvent = writes.length === 1 ? { type: "write", ...writes[0]! } : { type: "writes", writes };
    if (a.getSnapshot().status === "active") a.send(e);
    else exec.orphaned(e);
  };
  return {
    id: config.writerId,
    actor: a,
    config,
    state: () => String(a.getSnapshot().value),
    counters: exec.counters,
    ...stateReads(read),
    drained: (deadlineMs) => drained(exec, read, ports.clock, deadlineMs),
    async write(lba, data) {
      refuseIfStopped();
      // With custody on the writer's own copy is taken now: the caller may reuse its buffer at once, though the
      // call reaches the machine (and SmartWAL) only at the end of the turn.
      const own = config.custody === false ? data : new Uint8Array(data);
      return new Promise<WriteAck>((resolve, reject) => {
        if (calls.push({ id: exec.keep({ resolve, reject }), lba, data: own }) === 1) queueMicrotask(sendWrites);
      });
    },
    async sync(contract, timeoutMs) {
      refuseIfStopped();
      sendWrites();
      return new Promise<SyncOutcome>((resolve, reject) =>
        a.send({ type: "sync", id: exec.keep({ resolve, reject }), contract, timeoutMs }),
      );
    },
    fence: (newTerm) => {
      sendWrites();
      a.send({ type: "fence", newTerm });
    },
    stop: () => {
      sendWrites();
      if (a.getSnapshot().status === "active") a.send({ type: "stop" });
      a.stop();
    },
  };
}

/** The writer's read-only figures, from its current state. */
function stateReads(read: () => WriterState) {
  return {
    heads: () => laneHeads(read()),
    newestTerm: () => read().newestTerm,
    manifests: () => listToArray(read().cuts),
    protectedThrough: (contract: string, lane: string) => protectedThrough(read(), contract, lane),
    retainedSeqs: (lane: string) => read().lanes[lane]?.retained ?? RangeSet.EMPTY,
    owedTo: (lane: string, holder: string) => {
      const l = read().lanes[lane];
      return l === undefined ? RangeSet.EMPTY : edgePending(l.ledger, l.retained, holder);
    },
    custodyLagSeqs: () => custodyLag(read()),
    custodyBacklogBytes: () => custodyBacklogBytes(read()),
  };
}

/**
 * Resolves once custody has taken everything this writer retains (every lane's retention empty),
 * or with the sequences still retained when `deadlineMs` passes first. For a graceful stop: the
 * writer keeps re-sending meanwhile.
 */
async function drained(
  exec: WriterExecutor,
  read: () => WriterState,
  clock: Clock,
  deadlineMs: number,
): Promise<Record<string, RangeSet>> {
  const until = clock.now() + deadlineMs;
  for (;;) {
    exec.flushCoalesced(); // a graceful stop does not wait for the coalesced stream's cadence
    const s = read();
    const left: Record<string, RangeSet> = {};
    for (const n of s.all) if (!s.lanes[n]!.retained.isEmpty) left[n] = s.lanes[n]!.retained;
    if (Object.keys(left).length === 0 || clock.now() >= until) return left;
    await new Promise<void>((resolve) => clock.setTimeout(() => resolve(), 50));
  }
}
