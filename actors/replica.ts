import { createActor, waitFor, type Actor } from "xstate";
import type { Counters } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";
import { replicaMachine, ReplicaState } from "./replica.machine.ts";
import { CatchUpUnavailableError } from "./replica/catch-up-refusal.ts";
import type { CatchUpReport } from "./replica/replica-catch-up-flow.ts";
import { ReplicaCore, type ReplicaConfig, type ReplicaPorts } from "./replica/replica-core.ts";

/** A running replica consumer. */
export interface Replica {
  readonly actor: Actor<typeof replicaMachine>;
  readonly counters: Counters;
  /** Highest source LSN applied (not necessarily durable). */
  appliedLsn(): number;
  /** Highest source LSN durable here, as of the last barrier (persisted: it survives a restart). */
  flushedLsn(): number;
  /** Barrier: everything applied becomes durable; resolves with the flushed source LSN. */
  barrier(): Promise<number>;
  /**
   * Catches up from the primary over NATS (its catch-up service must serve this replica) and ends
   * with a barrier. Rejects with CatchUpRefusedError (the primary's code), a TransportError, or
   * CatchUpUnavailableError while another catch-up runs or the replica is not serving.
   */
  catchUp(): Promise<CatchUpReport>;
  /** Stops serving (the volume stays open; its owner closes it). */
  stop(): void;
}

/** Thrown when a replica cannot start (position file unreadable, transport closed). */
export class ReplicaStartError extends CustodyError {
  constructor(message: string) {
    super("replica_start_failed", message, {});
  }
}

/**
 * Starts a replica consumer; resolves once it serves. Throws ReplicaStartError. `catchUpTimeoutMs`: wait per catch-up
 * answer (default 10 s).
 */
export async function startReplica(
  config: ReplicaConfig,
  ports: ReplicaPorts & { catchUpTimeoutMs?: number },
): Promise<Replica> {
  let actor: Actor<typeof replicaMachine> | undefined;
  const core = new ReplicaCore(config, ports, (lane, msg) => actor?.send({ type: "nats.message", lane, msg }));
  const link = {
    transport: ports.transport,
    dataKey: ports.dataKey,
    ...(ports.catchUpTimeoutMs !== undefined ? { timeoutMs: ports.catchUpTimeoutMs } : {}),
  };
  actor = createActor(replicaMachine, { input: { core, link } });
  actor.start();
  const a = actor;
  const snap = await waitFor(a, (s) => s.value !== ReplicaState.Starting);
  if (snap.value === ReplicaState.Failed)
    throw new ReplicaStartError(`replica ${config.replicaId} failed to start: ${snap.context.error}`);
  return {
    actor: a,
    counters: core.counters,
    appliedLsn: () => core.appliedLsn,
    flushedLsn: () => core.flushedLsn,
    barrier: () => core.barrier(),
    catchUp: () =>
      new Promise<CatchUpReport>((resolve, reject) => {
        // A stopped actor takes no events: refuse here, as the machine would.
        if (a.getSnapshot().status !== "active") return reject(new CatchUpUnavailableError("stopped"));
        a.send({ type: "catchUp", reply: { resolve, reject } });
      }),
    stop: () => {
      if (a.getSnapshot().status === "active") a.send({ type: "stop" });
      a.stop();
    },
  };
}
