import { seededRandom } from "../core/index.ts";

/** The faults a chaos run injects into real processes. */
export const ChaosFaultKind = {
  /** A nats-server is stopped (SIGTERM, or SIGKILL) and started again on the same store. */
  serverRestart: "server_restart",
  /** A holder process is SIGKILLed and started again `downMs` later (a new incarnation). */
  holderKill: "holder_kill",
  /** The controller process is SIGKILLed and started again `downMs` later. */
  controllerKill: "controller_kill",
  /** A region's server is frozen (SIGSTOP) for `ms`: its clients and gateways stall, a partition. */
  partition: "partition",
} as const;
export type ChaosFaultKind = (typeof ChaosFaultKind)[keyof typeof ChaosFaultKind];

export type ChaosFault =
  | { readonly kind: typeof ChaosFaultKind.serverRestart; readonly atMs: number; readonly region: string; readonly kill: boolean }
  | { readonly kind: typeof ChaosFaultKind.holderKill; readonly atMs: number; readonly holder: string; readonly downMs: number }
  | { readonly kind: typeof ChaosFaultKind.controllerKill; readonly atMs: number; readonly downMs: number }
  | { readonly kind: typeof ChaosFaultKind.partition; readonly atMs: number; readonly region: string; readonly ms: number };

/**
 * The fault schedule of a seed: 4–7 faults spread over `durationMs` (none in the first 3 s, so the
 * deployment runs first, nor in the last 3 s), at least one nats-server restart and one holder kill
 * per run. Deterministic per seed.
 */
export function chaosPlan(seed: number, o: { durationMs: number; regions: readonly string[]; holders: readonly string[] }): ChaosFault[] {
  const r = seededRandom(seed).fork("chaos");
  const n = r.int(4, 7);
  const at = () => r.int(3_000, Math.max(3_001, o.durationMs - 3_000));
  const out: ChaosFault[] = [
    { kind: ChaosFaultKind.serverRestart, atMs: at(), region: r.pick(o.regions), kill: r.chance(0.5) },
    { kind: ChaosFaultKind.holderKill, atMs: at(), holder: r.pick(o.holders), downMs: r.int(200, 3_000) },
  ];
  while (out.length < n) {
    const which = r.int(0, 3);
    if (which === 0) out.push({ kind: ChaosFaultKind.serverRestart, atMs: at(), region: r.pick(o.regions), kill: r.chance(0.5) });
    else if (which === 1) out.push({ kind: ChaosFaultKind.holderKill, atMs: at(), holder: r.pick(o.holders), downMs: r.int(200, 3_000) });
    else if (which === 2) out.push({ kind: ChaosFaultKind.controllerKill, atMs: at(), downMs: r.int(200, 3_000) });
    else out.push({ kind: ChaosFaultKind.partition, atMs: at(), region: r.pick(o.regions), ms: r.int(500, 4_000) });
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}
