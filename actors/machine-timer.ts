import { raise, type EventObject, type MachineContext } from "xstate";
import type { TimerArm } from "../core/index.ts";

/**
 * The action that answers `timer.arm`: raises the requested event to the machine itself after the
 * requested delay, on the actor's clock. XState cancels what is pending when the actor stops, so a
 * stopped actor has no timer left. Shared by the holder, writer and controller machines.
 */
export function armTimer<TContext extends MachineContext, TEvent extends EventObject, TDelay extends string = never>() {
  const arm = (event: TEvent) => event as unknown as TimerArm<TEvent>;
  return raise<TContext, TEvent, TEvent, undefined, TDelay>(({ event }) => arm(event).event, {
    delay: ({ event }) => arm(event).ms,
  });
}
