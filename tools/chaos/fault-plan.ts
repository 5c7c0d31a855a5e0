import { seededRandom } from "../../core/index.ts";

/** The faults a chaos run injects into real processes. */
export const ChaosFaultKind = {
  /** A region's nats-server is stopped (SIGTERM, or SIGKILL) and started again on the same store. */
  serverRestart: "server_restart",
  /** A holder process is SIGKILLed and started again `downMs` later (a new incarnation). */
  holderKill: "holder_kill",
  /** The active controller (the volume's lease holder) is SIGKILLed and started again `downMs` later. */
  controllerKill: "controller_kill",
  /**
   * The active controller (the lease holder) is frozen (SIGSTOP) for `ms`, then resumed: longer than the
   * lease timeout, so the standby takes over.
   */
  controllerPause: "controller_pause",
  /**
   * The control stream leader's server (a member of the control log's cluster) is SIGKILLed and started
   * again `downMs` later.
   */
  controlLeaderKill: "control_leader_kill",
  /** A region's server is frozen (SIGSTOP) for `ms`: its clients and gateways stall, a partition. */
  partition: "partition",
} as const;
export type ChaosFaultKind = (typeof ChaosFaultKind)[keyof typeof ChaosFaultKind];

export type ChaosFault =
  | {
      readonly kind: typeof ChaosFaultKind.serverRestart;
      readonly atMs: number;
      readonly region: string;
      readonly kill: boolean;
    }
  | {
      readonly kind: typeof ChaosFaultKind.holderKill;
      readonly atMs: number;
      readonly holder: string;
      readonly downMs: number;
    }
  | { readonly kind: typeof ChaosFaultKind.controllerKill; readonly atMs: number; readonly downMs: number }
  | { readonly kind: typeof ChaosFaultKind.controllerPause; readonly atMs: number; readonly ms: number }
  | { readonly kind: typeof ChaosFaultKind.controlLeaderKill; readonly atMs: number; readonly downMs: number }
  | {
      readonly kind: typeof ChaosFaultKind.partition;
      readonly atMs: number;
      readonly region: string;
      readonly ms: number;
    };

/** Options of `chaosPlan`. */
export interface ChaosPlanOptions {
  readonly durationMs: number;
  /** Regions whose server may be restarted or partitioned. */
  readonly regions: readonly string[];
  readonly holders: readonly string[];
  /** The controllers' lease timeout: a `controller_pause` lasts longer, so the standby claims. */
  readonly leaseTimeoutMs: number;
}

/**
 * The fault schedule of a seed: 4–7 faults spread over `durationMs` (none in the first 3 s, so the
 * deployment runs first, nor in the last 3 s), at least one nats-server restart, one holder kill
 * and one control-plane failover (the control stream leader's server killed, or the active
 * controller frozen past its lease timeout) per run. Deterministic per seed.
 */
export function chaosPlan(seed: number, o: ChaosPlanOptions): ChaosFault[] {
  const r = seededRandom(seed).fork("chaos");
  const n = r.int(4, 7);
  const at = () => r.int(3_000, Math.max(3_001, o.durationMs - 3_000));
  const serverRestart = (): ChaosFault => ({
    kind: ChaosFaultKind.serverRestart,
    atMs: at(),
    region: r.pick(o.regions),
    kill: r.chance(0.5),
  });
  const holderKill = (): ChaosFault => ({
    kind: ChaosFaultKind.holderKill,
    atMs: at(),
    holder: r.pick(o.holders),
    downMs: r.int(200, 3_000),
  });
  const leaderKill = (): ChaosFault => ({
    kind: ChaosFaultKind.controlLeaderKill,
    atMs: at(),
    downMs: r.int(1_000, 5_000),
  });
  const pause = (): ChaosFault => ({
    kind: ChaosFaultKind.controllerPause,
    atMs: at(),
    ms: r.int(o.leaseTimeoutMs + 1_000, o.leaseTimeoutMs + 5_000),
  });
  const out: ChaosFault[] = [serverRestart(), holderKill(), r.chance(0.5) ? leaderKill() : pause()];
  while (out.length < n) {
    const which = r.int(0, 5);
    if (which === 0) out.push(serverRestart());
    else if (which === 1) out.push(holderKill());
    else if (which === 2) out.push({ kind: ChaosFaultKind.controllerKill, atMs: at(), downMs: r.int(200, 6_000) });
    else if (which === 3) out.push(pause());
    else if (which === 4) out.push(leaderKill());
    else out.push({ kind: ChaosFaultKind.partition, atMs: at(), region: r.pick(o.regions), ms: r.int(500, 4_000) });
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}
