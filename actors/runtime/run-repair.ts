import { serveRepairTasks, type RepairWorker } from "../index.ts";
import { checkToken } from "../../transport/protocol/index.ts";
import { Counters, systemClock } from "../../core/index.ts";
import { connectRole } from "./connect.ts";
import type { RepairRoleConfig } from "./role-config.ts";

/** A repair worker running as a process. */
export interface RunningRepairWorker {
  readonly worker: RepairWorker;
  readonly counters: Counters;
  readonly lost: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a repair worker (`custody run repair`): it takes its volumes' repair tasks and runs them
 * (see actors/repair/repair-worker.ts). A stop waits for the repairs running to end.
 */
export async function runRepairWorker(cfg: RepairRoleConfig): Promise<RunningRepairWorker> {
  for (const v of cfg.volumes) checkToken(v, "volume");
  const { transport, lost } = await connectRole(cfg.nats, `repair-${cfg.workerId}`);
  const counters = new Counters();
  const worker = serveRepairTasks(transport, {
    volumes: cfg.volumes,
    clock: systemClock,
    counters,
    ...(cfg.requestTimeoutMs !== undefined ? { requestTimeoutMs: cfg.requestTimeoutMs } : {}),
  });
  // Subscribed at the server before the process says it is ready (a task sent then is taken).
  await transport.flush();
  return {
    worker,
    counters,
    lost,
    async stop() {
      await worker.stop();
      await transport.close();
    },
  };
}
