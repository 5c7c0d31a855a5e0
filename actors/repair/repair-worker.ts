import type { Clock, Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import {
  decodeMessage,
  encodeMessage,
  repairAnswerSpec,
  repairOutcomeSpec,
  repairTaskSpec,
  repairTaskSubject,
} from "../../transport/protocol/index.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/index.ts";
import { runRepairTask } from "./repair.ts";
import { natsRepairPort } from "./repair-port-nats.ts";
import { outcomeToWire } from "./repair-wire.ts";

/** A running repair worker: the tasks it took and how to stop taking more. */
export interface RepairWorker {
  /** Repairs running now. */
  readonly running: number;
  /** Stops taking tasks and waits for the running ones to end. */
  stop(): Promise<void>;
}

/**
 * Takes the repair tasks of `volumes` (`custody.v1.repair-task.<volume>`, one queue group per
 * volume so each task goes to one worker), runs each as a root `repairMachine` actor whose port
 * talks to the volume's controller over NATS, and answers the task with its outcome. A task that
 * does not decode is answered with a refusal and counted (`repair_task_<code>`).
 */
export function serveRepairTasks(
  transport: Transport,
  opts: {
    readonly volumes: readonly string[];
    readonly clock: Clock;
    readonly counters: Counters;
    readonly requestTimeoutMs?: number;
  },
): RepairWorker {
  const tasks = new Set<Promise<void>>();
  const take = (msg: InboundMessage) => {
    const p = runOne(transport, msg, opts).finally(() => tasks.delete(p));
    tasks.add(p);
  };
  const subs: TransportSubscription[] = opts.volumes.map((v) =>
    transport.subscribe(repairTaskSubject(v), take, { queue: `repair-${v}` }),
  );
  return {
    get running() {
      return tasks.size;
    },
    async stop() {
      for (const s of subs) s.unsubscribe();
      await Promise.allSettled([...tasks]);
    },
  };
}

async function runOne(
  transport: Transport,
  msg: InboundMessage,
  opts: {
    readonly volumes: readonly string[];
    readonly clock: Clock;
    readonly counters: Counters;
    readonly requestTimeoutMs?: number;
  },
): Promise<void> {
  let task;
  try {
    task = decodeMessage(repairTaskSpec, msg.data);
    if (!opts.volumes.includes(task.volume) || msg.subject !== repairTaskSubject(task.volume))
      throw new CustodyError("repair_task_wrong_volume", `a task for ${task.volume} on ${msg.subject}`, {
        volume: task.volume,
      });
  } catch (err) {
    const code = err instanceof CustodyError ? err.code : "malformed";
    opts.counters.inc(`repair_task_${code.replace(/^repair_task_/, "")}`);
    transport.respond(
      msg,
      encodeMessage(repairAnswerSpec, {
        ok: false,
        code: code.slice(0, 64),
        message: (err instanceof Error ? err.message : String(err)).slice(0, 1024),
      }),
    );
    return;
  }
  opts.counters.inc("repair_task_started");
  const outcome = await runRepairTask({
    repairId: task.repairId,
    volume: task.volume,
    lanes: task.lanes,
    failed: task.failed,
    replacement: task.replacement,
    port: natsRepairPort(transport, {
      volume: task.volume,
      repairId: task.repairId,
      ...(opts.requestTimeoutMs !== undefined ? { timeoutMs: opts.requestTimeoutMs } : {}),
    }),
    transport,
    clock: opts.clock,
    repairBandwidthBytesPerSec: task.bandwidthBytesPerSec,
    ...(task.receiptTimeoutMs !== undefined ? { receiptTimeoutMs: task.receiptTimeoutMs } : {}),
  });
  opts.counters.inc(outcome.report !== undefined ? "repair_task_done" : "repair_task_failed");
  transport.respond(msg, encodeMessage(repairOutcomeSpec, outcomeToWire(outcome)));
}
