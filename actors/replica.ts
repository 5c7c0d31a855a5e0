import { createActor, waitFor, type Actor } from "xstate";
import { CustodyError } from "../core/index.ts";
import { replicaMachine, ReplicaState } from "./replica.machine.ts";
import { ReplicaCore, type ReplicaConfig, type ReplicaPorts } from "./replica/replica-core.ts";

/** A running replica consumer. */
export interface Replica {
  readonly actor: Actor<typeof replicaMachine>;
  readonly core: ReplicaCore;
  /** Barrier: everything applied becomes durable; resolves with the flushed source LSN. */
  barrier(): Promise<number>;
  /** Stops serving (the volume stays open; its owner closes it). */
  stop(): void;
}

/** Thrown when a replica cannot start (position file unreadable, transport closed). */
export class ReplicaStartError extends CustodyError {
  constructor(message: string) {
    super("replica_start_failed", message, {});
  }
}

/** Starts a replica consumer; resolves once it serves. Throws ReplicaStartError. */
export async function startReplica(config: ReplicaConfig, ports: ReplicaPorts): Promise<Replica> {
  let actor: Actor<typeof replicaMachine> | undefined;
  const core = new ReplicaCore(config, ports, (lane, msg) => actor?.send({ type: "nats.message", lane, msg }));
  actor = createActor(replicaMachine, { input: { core } });
  actor.start();
  const a = actor;
  const snap = await waitFor(a, (s) => s.value !== ReplicaState.Starting);
  if (snap.value === ReplicaState.Failed) throw new ReplicaStartError(`replica ${config.replicaId} failed to start: ${snap.context.error}`);
  return {
    actor: a,
    core,
    barrier: () => core.barrier(),
    stop: () => {
      if (a.getSnapshot().status === "active") a.send({ type: "stop" });
      a.stop();
    },
  };
}
