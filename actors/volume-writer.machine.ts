import { assertEvent, setup } from "xstate";
import type { ConnectionEvent, InboundMessage } from "../transport/transport.ts";
import type { RangeSet } from "../lanes/range-set.ts";
import { WriterFencedError } from "./writer/writer-config.ts";
import type { WriterCore } from "./writer/writer-core.ts";

/**
 * The Volume Writer actor. Lifecycle: active → fenced → stopped (or active → stopped).
 * - active: writes are admitted by SmartWAL and streamed as units; receipts fold into protection.
 * - fenced: a newer writer term took over (failover). No write is admitted again, pending
 *   protected syncs fail; holders refuse this term's units anyway once they saw the newer term.
 * The machine is the single owner of inbound receipts (named action `foldReceipt`).
 */

/** Lifecycle states, as an enumeration. */
export const WriterState = { Active: "active", Fenced: "fenced", Stopped: "stopped" } as const;
export type WriterState = (typeof WriterState)[keyof typeof WriterState];

export interface WriterContext {
  readonly core: WriterCore;
  fencedBy?: number;
}

export type WriterEvent =
  | { type: "nats.receipt"; lane: string; msg: InboundMessage }
  | { type: "nats.status"; msg: InboundMessage }
  | { type: "nats.release"; msg: InboundMessage }
  | { type: "release.checked"; lane: string; holder: string; ranges: RangeSet }
  | { type: "transport.connection"; event: ConnectionEvent }
  | { type: "fence"; newTerm: number }
  | { type: "stop" };

export const volumeWriterMachine = setup({
  types: {
    context: {} as WriterContext,
    events: {} as WriterEvent,
    input: {} as { core: WriterCore },
  },
  actions: {
    startCore: ({ context }) => context.core.start(),
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
  states: {
    [WriterState.Active]: {
      on: {
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
        stop: { target: WriterState.Stopped },
      },
    },
    [WriterState.Stopped]: { type: "final", entry: "stopCore" },
  },
});
