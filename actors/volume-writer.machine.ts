import { assertEvent, raise, setup } from "xstate";
import type { TimerArm } from "../core/index.ts";
import { armTimer } from "./machine-timer.ts";
import type { ConnectionEvent, InboundMessage } from "../transport/index.ts";
import type { RangeSet } from "../lanes/index.ts";
import { WriterFencedError } from "./writer/writer-config.ts";
import type { WriteAck, WriterCore } from "./writer/writer-core.ts";
import type { WriterTimer } from "./writer/writer-ports.ts";

/**
 * The Volume Writer actor. Lifecycle: active → fenced → stopped (or active → stopped).
 * - active: writes are admitted by SmartWAL and streamed as units; receipts fold into protection.
 * - fenced: a newer writer term took over (failover). No write is admitted again, pending
 *   protected syncs fail; holders refuse this term's units anyway once they saw the newer term.
 * The machine is the single owner of inbound receipts (named action `foldReceipt`), and every
 * write and sync enters through it (`write` / `sync` events): only the active state admits them;
 * fenced and stopped writers refuse them with WriterFencedError.
 */

/** Lifecycle states, as an enumeration. */
export const WriterState = { Active: "active", Fenced: "fenced", Stopped: "stopped" } as const;
export type WriterState = (typeof WriterState)[keyof typeof WriterState];

export interface WriterContext {
  readonly core: WriterCore;
  fencedBy?: number;
}

/** Where the outcome of a write or sync goes (the caller's promise). */
export interface Reply<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
}

/** What a sync resolves to. */
export interface SyncOutcome {
  readonly durableLsn: number;
  readonly heads: Record<string, number>;
}

export type WriterEvent =
  | { type: "write"; lba: number; data: Uint8Array; reply: Reply<WriteAck> }
  | { type: "sync"; contract?: string | undefined; timeoutMs?: number | undefined; reply: Reply<SyncOutcome> }
  | { type: "nats.receipt"; lane: string; msg: InboundMessage }
  | { type: "nats.status"; msg: InboundMessage }
  | { type: "nats.release"; msg: InboundMessage }
  | { type: "release.checked"; lane: string; holder: string; ranges: RangeSet }
  | { type: "transport.connection"; event: ConnectionEvent }
  | { type: "fence"; newTerm: number }
  | { type: "stop" }
  | WriterTimer
  | TimerArm<WriterTimer>;

export const volumeWriterMachine = setup({
  types: {
    context: {} as WriterContext,
    events: {} as WriterEvent,
    input: {} as { core: WriterCore },
  },
  actions: {
    startCore: ({ context }) => context.core.start(),
    admitWrite: ({ context, event }) => {
      assertEvent(event, "write");
      context.core.write(event.lba, event.data).then(event.reply.resolve, event.reply.reject);
    },
    admitSync: ({ context, event }) => {
      assertEvent(event, "sync");
      context.core.sync(event.contract, event.timeoutMs).then(event.reply.resolve, event.reply.reject);
    },
    refuseCall: ({ context, self, event }) => {
      assertEvent(event, ["write", "sync"]);
      context.core.counters.inc("writer_fenced");
      event.reply.reject(new WriterFencedError({ term: context.core.config.term, state: self.getSnapshot().value }));
    },
    foldReceipt: ({ context, event }) => {
      assertEvent(event, "nats.receipt");
      context.core.handleReceipt(event.lane, event.msg);
    },
    foldEdgeRelease: ({ context, event }) => {
      assertEvent(event, "nats.release");
      context.core.handleEdgeRelease(event.msg);
    },
    foldCheckedEdgeRelease: ({ context, event }) => {
      assertEvent(event, "release.checked");
      context.core.edgeReleaseChecked(event.lane, event.holder, event.ranges);
    },
    connectionChanged: ({ context, event }) => {
      assertEvent(event, "transport.connection");
      context.core.connectionChanged(event.event);
    },
    foldStatus: ({ context, event }) => {
      assertEvent(event, "nats.status");
      context.core.handleStatus(event.msg);
    },
    recordFence: ({ context, event }) => {
      assertEvent(event, "fence");
      context.fencedBy = event.newTerm;
      context.core.counters.inc("fenced");
      context.core.failWaiters(new WriterFencedError({ term: context.core.config.term, newTerm: event.newTerm }));
    },
    // Timers are the machine's own delayed events: the core asks with `timer.arm`, the repeating
    // ones raise their next tick, and a stopped writer has none left.
    armTimer: armTimer<WriterContext, WriterEvent>(),
    resendDue: ({ context }) => context.core.resendDue(),
    armNextResend: raise({ type: "timer.resend" }, { delay: ({ context }) => context.core.resendEveryMs }),
    publishProgress: ({ context }) => context.core.publishProgress(),
    armNextProgress: raise({ type: "timer.progress" }, { delay: ({ context }) => context.core.progressEveryMs }),
    stopCore: ({ context }) => {
      context.core.failWaiters(new WriterFencedError({ term: context.core.config.term, reason: "stopped" }));
      context.core.stop();
    },
  },
  guards: {
    newerTerm: ({ context, event }) => event.type === "fence" && event.newTerm > context.core.config.term,
  },
}).createMachine({
  id: "volume-writer",
  context: ({ input }) => ({ core: input.core }),
  initial: WriterState.Active,
  entry: "startCore",
  // In every state but stopped (a fenced writer still re-sends what holders have not receipted).
  on: {
    "timer.arm": { actions: "armTimer" },
    "timer.resend": { actions: ["resendDue", "armNextResend"] },
    "timer.progress": { actions: ["publishProgress", "armNextProgress"] },
  },
  states: {
    [WriterState.Active]: {
      on: {
        write: { actions: "admitWrite" },
        sync: { actions: "admitSync" },
        "nats.receipt": { actions: "foldReceipt" },
        "nats.status": { actions: "foldStatus" },
        "nats.release": { actions: "foldEdgeRelease" },
        "release.checked": { actions: "foldCheckedEdgeRelease" },
        "transport.connection": { actions: "connectionChanged" },
        fence: { guard: "newerTerm", target: WriterState.Fenced, actions: "recordFence" },
        stop: { target: WriterState.Stopped },
      },
    },
    [WriterState.Fenced]: {
      on: {
        // Receipts still fold: they tell the truth about what of the old history survived.
        "nats.receipt": { actions: "foldReceipt" },
        write: { actions: "refuseCall" },
        sync: { actions: "refuseCall" },
        stop: { target: WriterState.Stopped },
      },
    },
    [WriterState.Stopped]: { type: "final", entry: "stopCore" },
  },
});
