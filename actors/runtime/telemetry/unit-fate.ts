/**
 * Where a unit's custody ended (pure): which holders on its path admitted it, which never did and
 * what should have brought it there, the last hop it reached, and — when the run's span files hold
 * a strike (`chaos.strike`, which the demo records: tools/demo/strike-span.ts) after the write —
 * whether any holder that had it outlived the strike. A unit every one of whose holders the strike
 * killed is lost in that strike.
 */
import type { JsonlSpanRecord } from "./jsonl-span-exporter.ts";
import { startMs, type TraceNode, type TraceTree } from "./trace-tree.ts";

/** The name of a strike's span (the demo records one per strike); `custody trace` looks for it. */
export const STRIKE_SPAN = "chaos.strike";

/** A holder that serves the unit's volume and lane, and whom it takes units from. */
export interface PathHolder {
  readonly id: string;
  readonly site: string;
  readonly upstream: readonly string[];
}

/** One holder's part in the unit's custody. */
export interface FateHolder {
  readonly holder: string;
  readonly site: string;
  /** Offset (ms from the write) of the first admit that stored it or found it already held. */
  readonly admittedAtMs?: number;
  /** Offset of the first finished `link.send` to this holder (a send still on its link has no span). */
  readonly sentAtMs?: number;
  readonly upstream: readonly string[];
  /** Killed by the strike. */
  readonly killed: boolean;
}

/** The strike after the write, as its span tells it. */
export interface FateStrike {
  readonly atMs: number;
  readonly at: string;
  readonly signal: string;
  readonly regions: readonly string[];
  readonly killed: readonly string[];
}

/** The fate of one unit. */
export interface UnitFate {
  /**
   * `held`: a holder that had it is alive (or no strike is recorded); `lost_in_strike`: the strike
   * killed every holder that had it; `never_held`: no holder admitted it.
   */
  readonly verdict: "held" | "lost_in_strike" | "never_held";
  readonly writer: string;
  readonly holders: readonly FateHolder[];
  /** The latest admit that took the unit into custody. */
  readonly lastHop?: { readonly holder: string; readonly site: string; readonly atMs: number };
  readonly strike?: FateStrike;
  /** Holders that had the unit and were not struck. */
  readonly survivors: readonly string[];
  /** The same, as lines for a terminal. */
  readonly lines: readonly string[];
}

/** Admits that leave the unit in the holder's custody: stored now, or stored by an earlier admit. */
const HOLDS = new Set(["stored", "duplicate"]);

function walk(nodes: readonly TraceNode[], out: TraceNode[] = []): TraceNode[] {
  for (const n of nodes) {
    out.push(n);
    walk(n.children, out);
  }
  return out;
}

const strList = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const ms = (n: number) => `+${n.toFixed(0)} ms`;

/** The first strike span that starts after `t0Ms` (wall-clock ms), as offsets from `t0Ms`. */
export function strikeAfter(spans: readonly JsonlSpanRecord[], t0Ms: number): FateStrike | undefined {
  const s = spans
    .filter((x) => x.name === STRIKE_SPAN && startMs(x) >= t0Ms)
    .sort((a, b) => startMs(a) - startMs(b))[0];
  if (s === undefined) return undefined;
  return {
    atMs: startMs(s) - t0Ms,
    at: s.startTime,
    signal: String(s.attributes["custody.signal"] ?? "killed"),
    regions: strList(s.attributes["custody.regions"]),
    killed: strList(s.attributes["custody.killed"]),
  };
}

/** One holder's line of the fate: when it admitted the unit, or why its spans show no admit. */
function holderLine(h: FateHolder, killed: ReadonlySet<string>): string {
  if (h.admittedAtMs !== undefined)
    return `  ${h.holder} (${h.site}): admitted at ${ms(h.admittedAtMs)}${h.killed ? ", killed by the strike" : ""}`;
  const from = h.upstream.length > 0 ? h.upstream.join(" or ") : "its sender";
  const fromKilled = h.upstream.length > 0 && h.upstream.every((u) => killed.has(u));
  const why =
    h.sentAtMs !== undefined
      ? `sent at ${ms(h.sentAtMs)}`
      : `no finished send from ${from}: ` +
        `still on its link or not yet sent${fromKilled ? " when the strike killed it" : ""}`;
  return `  ${h.holder} (${h.site}): no admit in its spans — ${why}${h.killed ? "; killed by the strike" : ""}`;
}

/**
 * The fate of the unit whose trace is `tree`. `path`: the holders serving its volume and lane (from
 * the deployment; empty when unknown, then only the holders the spans show are listed). `spans`:
 * the run's spans (for the strike).
 */
export function unitFate(tree: TraceTree, path: readonly PathHolder[], spans: readonly JsonlSpanRecord[]): UnitFate {
  const nodes = walk(tree.roots);
  const writer = nodes.find((n) => n.name === "writer.write")?.actor ?? "?";
  const strike = strikeAfter(spans, tree.t0Ms);
  const killed = new Set(strike?.killed ?? []);
  const admits = nodes.filter((n) => n.name === "holder.admit" && HOLDS.has(n.outcome ?? ""));
  const sendsTo = (h: string) => nodes.filter((n) => n.name === "link.send" && n.detail.includes(`(${h})`));
  const first = (xs: readonly TraceNode[]) => (xs.length === 0 ? undefined : Math.min(...xs.map((x) => x.offsetMs)));
  const known =
    path.length > 0
      ? path
      : [...new Map(admits.map((a) => [a.actor, { id: a.actor, site: a.site, upstream: [] as string[] }])).values()];
  const holders: FateHolder[] = known.map((p) => {
    const admittedAtMs = first(admits.filter((a) => a.actor === p.id));
    const sentAtMs = first(sendsTo(p.id));
    return {
      holder: p.id,
      site: p.site,
      upstream: p.upstream,
      killed: killed.has(p.id),
      ...(admittedAtMs !== undefined ? { admittedAtMs } : {}),
      ...(sentAtMs !== undefined ? { sentAtMs } : {}),
    };
  });
  const had = holders.filter((h) => h.admittedAtMs !== undefined);
  const last = [...had].sort((a, b) => b.admittedAtMs! - a.admittedAtMs!)[0];
  const survivors = had.filter((h) => !h.killed).map((h) => h.holder);
  const verdict =
    had.length === 0 ? "never_held" : strike !== undefined && survivors.length === 0 ? "lost_in_strike" : "held";

  const lines: string[] = [];
  const strikeText =
    strike === undefined
      ? ""
      : `the strike at ${ms(strike.atMs)} ` +
        `(${strike.signal}${strike.regions.length > 0 ? ` of ${strike.regions.join(", ")}` : ""}: ` +
        `${strike.killed.join(", ") || "no role process"})`;
  if (verdict === "lost_in_strike")
    lines.push(`fate: LOST in ${strikeText} — it killed every holder that had the unit`);
  else if (verdict === "never_held")
    lines.push(`fate: no holder admitted it${strike !== undefined ? ` before ${strikeText}` : ""}`);
  else if (strike !== undefined) lines.push(`fate: held by ${survivors.join(", ")} after ${strikeText}`);
  else lines.push(`fate: in custody at ${survivors.join(", ")} (this run's span files record no strike)`);
  lines.push(
    last === undefined
      ? `last hop: none — ${writer} wrote it at ${ms(0)}`
      : `last hop: ${last.holder} (${last.site}) admitted it at ${ms(last.admittedAtMs!)}`,
  );
  for (const h of holders) lines.push(holderLine(h, killed));
  return {
    verdict,
    writer,
    holders,
    ...(last !== undefined ? { lastHop: { holder: last.holder, site: last.site, atMs: last.admittedAtMs! } } : {}),
    ...(strike !== undefined ? { strike } : {}),
    survivors,
    lines,
  };
}

/**
 * The holders serving `volume`'s `lane` in a custody deployment file (`custody init`'s input); empty
 * for anything else.
 */
export function pathOf(deployment: unknown, volume: string, lane: string): PathHolder[] {
  const holders = (deployment as { holders?: unknown } | null)?.holders;
  if (!Array.isArray(holders)) return [];
  const out: PathHolder[] = [];
  for (const h of holders as {
    id?: unknown;
    site?: unknown;
    standby?: unknown;
    lanes?: { volume?: unknown; lane?: unknown; upstream?: unknown }[];
  }[]) {
    if (typeof h.id !== "string" || h.standby === true) continue;
    const l = (h.lanes ?? []).find((x) => x.volume === volume && x.lane === lane);
    if (l !== undefined)
      out.push({ id: h.id, site: typeof h.site === "string" ? h.site : "?", upstream: strList(l.upstream) });
  }
  return out;
}
