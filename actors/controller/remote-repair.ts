import { CustodyError } from "../../core/index.ts";
import {
  decodeMessage,
  encodeMessage,
  repairOutcomeSpec,
  repairTaskSpec,
  repairTaskSubject,
} from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { RepairOutcome } from "../repair/index.ts";
import { outcomeFromWire } from "../repair/index.ts";
import type { ReplacementAdmission } from "../repair/index.ts";

/** One repair handed to a worker: what the `repair-task` message carries. */
export interface RemoteRepairTask {
  readonly repairId: string;
  readonly volume: string;
  readonly lanes: readonly string[];
  readonly failed: readonly string[];
  readonly replacement: ReplacementAdmission;
  readonly bandwidthBytesPerSec: number;
  readonly receiptTimeoutMs?: number | undefined;
}

/**
 * Hands `task` to a repair worker of its volume (`custody.v1.repair-task.<volume>`) and resolves
 * with the outcome the worker answers. Never rejects: no worker, no answer within `timeoutMs` or
 * an unreadable answer is a failed outcome (step `delegating`).
 */
export async function requestRemoteRepair(
  transport: Transport,
  task: RemoteRepairTask,
  timeoutMs: number,
): Promise<RepairOutcome> {
  try {
    const body = {
      ...task,
      lanes: [...task.lanes],
      failed: [...task.failed],
      ...(task.receiptTimeoutMs === undefined ? {} : { receiptTimeoutMs: task.receiptTimeoutMs }),
    };
    const reply = await transport.request(repairTaskSubject(task.volume), encodeMessage(repairTaskSpec, body), {
      timeoutMs,
    });
    const outcome = outcomeFromWire(decodeMessage(repairOutcomeSpec, reply.data));
    if (outcome.repairId !== task.repairId)
      return failed(task.repairId, "repair_outcome_mismatch", `the worker answered for ${outcome.repairId}`);
    return outcome;
  } catch (err) {
    return failed(
      task.repairId,
      err instanceof CustodyError ? err.code : "repair_delegation_failed",
      err instanceof Error ? err.message : String(err),
    );
  }
}

function failed(repairId: string, code: string, message: string): RepairOutcome {
  return { repairId, failure: { step: "delegating", code, message } };
}
