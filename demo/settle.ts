/**
 * When the loss of a strike is known: the survivors have accounted for everything that reached
 * them before it. A survivor has, when nothing it forwards is still in flight on a link and every
 * unit it retains is covered by a receipt the controller has verified. From then on nothing can
 * change the outcome (the stricken regions send nothing more), so the controller's evaluation
 * over those receipts is the prediction an operator reads and a recovery can be checked against.
 */
import type { VolumeStatus } from "../actors/controller/status-document.ts";
import { CustodyError } from "../core/custody-error.ts";
import { RangeSet } from "../lanes/range-set.ts";
import type { RunningNetwork } from "./network-launcher.ts";

/** A holder process's answer to `stats`. */
export interface HolderStats {
  /** Volume → retained sequences and payload bytes. */
  readonly volumes: Record<string, { retained: [number, number][]; bytes: number }>;
  /** Units held back on its shaped links (sent, not yet delivered). */
  readonly inFlight: number;
  /** [first, last, wall ms] of each first-volume admission. */
  readonly captured: [number, number, number][];
}

/** The controller process's answer to `status`/`evaluate` for one volume. */
export interface ControllerView {
  readonly status: VolumeStatus | null;
  /** Holder → sequences its verified receipts show it retaining. */
  readonly receipted: Record<string, [number, number][]>;
}

/** Thrown when the survivors do not account for their custody within the bound. */
export class SettleTimeoutError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("survivors_not_settled", "the survivors did not account for their custody in time", detail);
  }
}

/**
 * What keeps the survivors from being settled (empty = settled). Pure: `stats` by holder, `views`
 * by volume.
 */
export function unaccounted(survivors: readonly string[], volumes: readonly string[], stats: Readonly<Record<string, HolderStats | undefined>>, views: Readonly<Record<string, ControllerView | undefined>>): string[] {
  const out: string[] = [];
  for (const h of survivors) {
    const s = stats[h];
    if (s === undefined) {
      out.push(`${h}: no stats`);
      continue;
    }
    if (s.inFlight > 0) out.push(`${h}: ${s.inFlight} in flight`);
    for (const v of volumes) {
      const held = RangeSet.fromJSON(s.volumes[v]?.retained ?? []);
      const proven = RangeSet.fromJSON(views[v]?.receipted[h] ?? []);
      if (!proven.coversAll(held)) out.push(`${h}/${v}: holds ${held.toString()}, receipts show ${proven.toString()}`);
    }
  }
  return out;
}

/**
 * Waits (up to `timeoutMs`) until `unaccounted` is empty on two checks in a row with the same
 * holdings, and returns the survivors' retained ranges per volume. Throws SettleTimeoutError.
 */
export async function settledSurvivors(net: RunningNetwork, survivors: readonly string[], volumes: readonly string[], timeoutMs: number): Promise<Record<string, Record<string, [number, number][]>>> {
  const deadline = Date.now() + timeoutMs;
  let previous: string | undefined;
  let why: string[] = [];
  for (;;) {
    const stats: Record<string, HolderStats | undefined> = {};
    await Promise.all(survivors.map(async (h) => (stats[h] = await net.actors.get(h)?.call<HolderStats>("stats", {}, 5000).catch(() => undefined))));
    const views: Record<string, ControllerView | undefined> = {};
    for (const v of volumes) views[v] = await net.actors.get(net.deployment.controller.id)?.call<ControllerView>("status", { volume: v }, 5000).catch(() => undefined);
    why = unaccounted(survivors, volumes, stats, views);
    const ranges = Object.fromEntries(volumes.map((v) => [v, Object.fromEntries(survivors.map((h) => [h, stats[h]?.volumes[v]?.retained ?? []]))]));
    const key = JSON.stringify(ranges);
    if (why.length === 0 && key === previous) return ranges;
    previous = why.length === 0 ? key : undefined;
    if (Date.now() > deadline) throw new SettleTimeoutError({ why });
    await new Promise((r) => setTimeout(r, 250));
  }
}
