import type { StepResult } from "./writer-effects.ts";
import type { WriterEvent } from "./writer-events.ts";
import { unchanged } from "./writer-custody.ts";
import {
  applyEdgeRelease,
  fence,
  foldEdgeRelease,
  foldReceipt,
  foldReceipts,
  foldStatus,
  refuseReceipt,
  stop,
} from "./writer-receipt-step.ts";
import { connectionChanged, edgeReset, onProgressDue, onResendDue } from "./writer-timer-step.ts";
import {
  admitSync,
  admitWrite,
  admitWrites,
  cut,
  outboxFailed,
  outboxFlushed,
  syncLocal,
  unitSealed,
  waiterTimeout,
  walWritten,
} from "./writer-write-step.ts";
import type { WriterState } from "./writer-state.ts";

/**
 * The volume writer's step: (state, event) → new state and effects, pure. No I/O, no clock (time
 * comes in events as `nowMs`), and the input state is never changed. Events the step does not
 * act on (the machine's own timer ticks, which its executors sample into `resend.due` and
 * `progress.due`) change nothing.
 */
export function writerStep(s: WriterState, e: WriterEvent): StepResult<WriterState> {
  switch (e.type) {
    case "write":
      return admitWrite(s, e);
    case "writes":
      return admitWrites(s, e);
    case "wal.written":
      return walWritten(s, e);
    case "cut":
      return cut(s);
    case "unit.sealed":
      return unitSealed(s, e);
    case "outbox.flushed":
      return outboxFlushed(s, e);
    case "outbox.failed":
      return outboxFailed(s);
    case "sync":
      return admitSync(s, e);
    case "sync.local":
      return syncLocal(s, e);
    case "waiter.timeout":
      return waiterTimeout(s, e);
    case "receipt":
      return foldReceipt(s, e);
    case "receipts":
      return foldReceipts(s, e);
    case "receipt.invalid":
      return refuseReceipt(s, e);
    case "nats.status":
      return foldStatus(s, e);
    case "nats.release":
      return foldEdgeRelease(s, e);
    case "release.checked":
      return applyEdgeRelease(s, e);
    case "transport.connection":
      return connectionChanged(s, e);
    case "edge.reset":
      return edgeReset(s, e);
    case "resend.due":
      return onResendDue(s, e);
    case "progress.due":
      return onProgressDue(s, e);
    case "fence":
      return fence(s, e);
    case "stop":
      return stop(s);
    default:
      return unchanged(s);
  }
}
