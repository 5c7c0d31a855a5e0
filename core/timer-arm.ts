/**
 * A core's request for a timer: its actor's machine raises `event` to itself after `ms` (the
 * machines' shared `armTimer` action, actors/machine-timer.ts), so every timer is a delayed event
 * of the machine and none outlives a stopped actor.
 */
export interface TimerArm<T extends { readonly type: string }> {
  readonly type: "timer.arm";
  readonly ms: number;
  readonly event: T;
}
