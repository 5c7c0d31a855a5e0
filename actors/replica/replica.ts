import { createActor, fromPromise, waitFor, type Actor } from "xstate";
import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { replicaMachine, ReplicaState, type ReplicaEvent } from "./replica.machine.ts";
import { CatchUpUnavailableError } from "./catch-up-refusal.ts";
import { runCatchUp, type CatchUpReport, type CatchUpStart } from "./replica-catch-up-flow.ts";
import { ReplicaRefusal, type ApplyOp } from "./replica-effects.ts";
import { ReplicaExecutors, ReplicaRequestError, type ReplicaPorts } from "./replica-executors.ts";
import { initialReplicaState, type ReplicaConfig } from "./replica-state.ts";

/** A running replica consumer. */
export interface Replica {
  readonly actor: Actor<typeof replicaMachine>;
  readonly counters: Counters;
  /** Highest source LSN applied (not necessarily durable). */
  appliedLsn(): number;
  /** Highest source LSN durable here, as of the last barrier (persisted: it survives a restart). */
  flushedLsn(): number;
  /**
   * Barrier: everything applied becomes durable; resolves with the flushed source LSN. Rejects with
   * ReplicaRequestError `replica_stopped` once the replica stopped, `replica_volume_failed` when a write failed.
   */
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
 * answer (default 10 s). The machine holds plain data only; the executors built here close over the ports.
 */
export async function startReplica(
  config: ReplicaConfig,
  ports: ReplicaPorts & { catchUpTimeoutMs?: number },
): Promise<Replica> {
  let actor: Actor<typeof replicaMachine> | undefined;
  // Completions that arrive after the machine stopped have nobody to tell.
  const send = (event: ReplicaEvent) => {
    if (actor?.getSnapshot().status === "active") actor.send(event);
  };
  const initial = initialReplicaState(config, ports.dataKey);
  const exec = new ReplicaExecutors(initial.settings, ports, send);
  const link = {
    transport: ports.transport,
    dataKey: ports.dataKey,
    ...(ports.catchUpTimeoutMs !== undefined ? { timeoutMs: ports.catchUpTimeoutMs } : {}),
  };
  // The catch-up flow applies and barriers through the machine, like everything else the replica applies.
  const catchUpPorts = {
    apply: async (ops: readonly ApplyOp[]) => {
      await exec.ask((id) => ({ type: "apply", id, ops }));
    },
    barrier: () => exec.ask((id) => ({ type: "barrier", id })),
  };
  const machine = replicaMachine.provide({
    actors: {
      startPorts: fromPromise(() => exec.start()),
      catchUpFlow: fromPromise(({ input }: { input: CatchUpStart }) => runCatchUp(input, catchUpPorts, link)),
    },
    actions: { execute: (_, effect) => exec.execute(effect) },
  });
  actor = createActor(machine, { input: { state: initial } });
  actor.start();
  const a = actor;
  const snap = await waitFor(a, (s) => s.value !== ReplicaState.Starting);
  if (snap.value === ReplicaState.Failed) {
    a.stop();
    exec.execute({ type: "close" }); // subscriptions made before the failure end with it
    throw new ReplicaStartError(`replica ${config.replicaId} failed to start: ${snap.context.error}`);
  }
  const active = () => a.getSnapshot().status === "active";
  return {
    actor: a,
    counters: exec.counters,
    appliedLsn: () => a.getSnapshot().context.state.appliedLsn,
    flushedLsn: () => a.getSnapshot().context.state.flushedLsn,
    barrier: () =>
      active()
        ? exec.ask((id) => ({ type: "barrier", id }))
        : Promise.reject(new ReplicaRequestError(ReplicaRefusal.Stopped, "the replica stopped")),
    catchUp: () =>
      new Promise<CatchUpReport>((resolve, reject) => {
        // A stopped actor takes no events: refuse here, as the machine would.
        if (!active()) return reject(new CatchUpUnavailableError("stopped"));
        a.send({ type: "catchUp", id: exec.awaitCatchUp({ resolve, reject }) });
      }),
    stop: () => {
      if (active()) a.send({ type: "stop" });
      a.stop();
    },
  };
}
