/**
 * When the loss of a strike is known: the survivors have accounted for everything that reached
 * them before it — every unit any of them retains is covered by a receipt of one of them that the
 * controller has verified. From then on nothing can change the outcome (the stricken regions send
 * nothing more, and copies between survivors do not change what they hold together), so the
 * controller's evaluation over those receipts is the prediction an operator reads and a recovery
 * can be checked against.
 */
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { OperatorView } from "./operator-view.ts";
import type { ControllerView, HolderStats } from "./holder-stats.ts";

export type { ControllerView, HolderStats } from "./holder-stats.ts";

/** Thrown when the survivors do not account for their custody within the bound. */
export class SettleTimeoutError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("survivors_not_settled", "the survivors did not account for their custody in time", detail);
  }
}

/**
 * What keeps the survivors from being settled (empty = settled): units some survivor retains that
 * no survivor's verified receipt covers yet. Units still travelling between survivors do not
 * count: their sender retains them, so they are already in the survivors' holdings. Pure:
 * `stats` by holder, `views` by volume.
 */
export function unaccounted(
  survivors: readonly string[],
  volumes: readonly string[],
  stats: Readonly<Record<string, HolderStats | undefined>>,
  views: Readonly<Record<string, ControllerView | undefined>>,
): string[] {
  const out: string[] = [];
  const missing = survivors.filter((h) => stats[h] === undefined);
  for (const h of missing) out.push(`${h}: no stats`);
  if (missing.length > 0) return out;
  for (const v of volumes) {
    let held = RangeSet.EMPTY;
    let proven = RangeSet.EMPTY;
    for (const h of survivors) {
      held = held.union(RangeSet.fromJSON(stats[h]!.volumes[v]?.retained ?? []));
      proven = proven.union(RangeSet.fromJSON(views[v]?.receipted[h] ?? []));
    }
    if (!proven.coversAll(held))
      out.push(`${v}: survivors hold ${held.toString()}, their receipts show ${proven.toString()}`);
  }
  return out;
}

/** The survivors' holdings of each volume together (what a recovery from them can use). */
export function survivorsHold(
  survivors: readonly string[],
  volumes: readonly string[],
  stats: Readonly<Record<string, HolderStats | undefined>>,
): Record<string, [number, number][]> {
  return Object.fromEntries(
    volumes.map((v) => [
      v,
      survivors
        .reduce((acc, h) => acc.union(RangeSet.fromJSON(stats[h]?.volumes[v]?.retained ?? [])), RangeSet.EMPTY)
        .toJSON(),
    ]),
  );
}

/**
 * The settled holdings, and when the first of the two agreeing checks had read the controllers (a
 * status document evaluated since then reflects what they verified).
 */
export interface Settled {
  readonly ranges: Record<string, Record<string, [number, number][]>>;
  readonly sinceMs: number;
}

/**
 * Waits (up to `timeoutMs`) until `unaccounted` is empty on two checks in a row with the same
 * holdings together, reading holders' and controllers' stats over NATS as the operator, and
 * returns each survivor's retained ranges per volume (as of the last check). Throws SettleTimeoutError.
 */
export async function settledSurvivors(
  view: OperatorView,
  survivors: readonly string[],
  volumes: readonly string[],
  controllerOf: (volume: string) => string,
  timeoutMs: number,
): Promise<Settled> {
  const deadline = Date.now() + timeoutMs;
  let previous: { key: string; at: number } | undefined;
  let why: string[] = [];
  for (;;) {
    const all = await view.holders(volumes).catch(() => new Map<string, HolderStats>());
    const stats: Record<string, HolderStats | undefined> = Object.fromEntries(survivors.map((h) => [h, all.get(h)]));
    const views = await view.receipted(volumes, survivors, controllerOf).catch(() => ({}));
    // Everything the controllers had verified by now is in any evaluation from now on.
    const at = Date.now();
    why = unaccounted(survivors, volumes, stats, views);
    const ranges = Object.fromEntries(
      volumes.map((v) => [v, Object.fromEntries(survivors.map((h) => [h, stats[h]?.volumes[v]?.retained ?? []]))]),
    );
    const key = JSON.stringify(survivorsHold(survivors, volumes, stats));
    if (why.length === 0 && key === previous?.key) return { ranges, sinceMs: previous.at };
    previous = why.length === 0 ? { key, at } : undefined;
    if (Date.now() > deadline) throw new SettleTimeoutError({ why });
    await new Promise((r) => setTimeout(r, 250));
  }
}
