import type { Site } from "./topology.ts";
import { checkDependencyTag, checkLossDomain, siteDomains, validateSites } from "./topology.ts";
import { LossKind, worseLoss, type Loss } from "./scenario.ts";
import type { Residency } from "../core/index.ts";
import { legMonthlyCost, type Charge } from "./cost.ts";
import { InfeasiblePlacementError, PolicyInputError, UnknownReferenceError } from "./policy-errors.ts";

/** A site that could host a holder, with what it can sustain and what it costs. */
export interface PlacementCandidate {
  readonly id: string;
  readonly site: string;
  readonly residency: Residency;
  /** Keeps base snapshots and the full WAL since them (a recovery store). */
  readonly holdsBase: boolean;
  /** How long it keeps the tail it has forwarded (ms); recovery stores keep everything. */
  readonly retentionMs: number;
  readonly sendBytesPerSec: number;
  readonly drainBytesPerSec: number;
  readonly monthlyUsd: number;
}

/** A measured path between two sites (usable both ways). */
export interface MeasuredEdge {
  readonly from: string;
  readonly to: string;
  readonly rttMs: number;
  readonly jitterMs: number;
  readonly bandwidthBytesPerSec: number;
  readonly charges: readonly Charge[];
  readonly deps: readonly string[];
}

/**
 * A scenario the graph must survive: after `losses`, the volume must be recoverable to within
 * `maxLagMs` of the loss instant. `preceding` losses happened `intervalSec` earlier; holders whose
 * feed path they cut have been unfed since (the shared path counted as a dependency).
 */
export interface PlacementScenario {
  readonly name: string;
  readonly losses: readonly Loss[];
  readonly maxLagMs: number;
  readonly required: boolean;
  readonly preceding?: { readonly losses: readonly Loss[]; readonly intervalSec: number } | undefined;
}

/** Everything the placement search needs. */
export interface PlacementInput {
  readonly source: { readonly site: string; readonly sendBytesPerSec: number };
  readonly streamBytesPerSec: number;
  readonly sites: readonly Site[];
  readonly candidates: readonly PlacementCandidate[];
  readonly edges: readonly MeasuredEdge[];
  readonly contract: {
    readonly maxHolders: number;
    readonly days: number;
    readonly scenarios: readonly PlacementScenario[];
  };
}

/** Shapes compared: one holder fed directly, several fed directly, or some fed through a waypoint. */
export const GraphShape = { direct: "direct", parallel: "parallel", waypoint: "waypoint" } as const;
export type GraphShape = (typeof GraphShape)[keyof typeof GraphShape];

/** One placed edge of a custody graph, with its one-way capture delay and monthly transfer cost. */
export interface PlacedEdge {
  readonly from: string;
  readonly to: string;
  readonly delayMs: number;
  readonly monthlyUsd: number;
  readonly legs: number;
}

/** A scored custody graph. */
export interface CustodyGraph {
  readonly shape: GraphShape;
  readonly holders: string[];
  readonly edges: PlacedEdge[];
  readonly monthlyUsd: number;
  readonly scenarios: { name: string; required: boolean; covered: boolean; lagMs: number | null }[];
  /** Holder → upstream holders and path dependency tags it relies on to keep being fed. */
  readonly feedDependencies: Record<string, string[]>;
  readonly meetsContract: boolean;
}

/** The chosen graph plus the best of each shape, for comparison. */
export interface PlacementResult {
  readonly chosen: CustodyGraph;
  readonly byShape: Partial<Record<GraphShape, CustodyGraph>>;
  readonly graphsConsidered: number;
}

const SOURCE = "source";
const MAX_CANDIDATES = 12;

function pairKey(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

function validatePlacement(input: PlacementInput): void {
  validateSites(input.sites);
  const sites = new Set(input.sites.map((s) => s.id));
  if (!sites.has(input.source.site)) throw new UnknownReferenceError("source.site", input.source.site);
  if (input.candidates.length === 0) throw new PolicyInputError("candidates", "at least one candidate is required");
  if (input.candidates.length > MAX_CANDIDATES)
    throw new PolicyInputError("candidates", `at most ${MAX_CANDIDATES} candidates are searched`);
  const ids = new Set<string>();
  input.candidates.forEach((c, i) => {
    if (c.id === SOURCE || ids.has(c.id))
      throw new PolicyInputError(`candidates[${i}].id`, `duplicate or reserved id "${c.id}"`);
    ids.add(c.id);
    if (!sites.has(c.site)) throw new UnknownReferenceError(`candidates[${i}].site`, c.site);
  });
  input.edges.forEach((e, i) => {
    if (!sites.has(e.from)) throw new UnknownReferenceError(`edges[${i}].from`, e.from);
    if (!sites.has(e.to)) throw new UnknownReferenceError(`edges[${i}].to`, e.to);
    e.deps.forEach((d, j) => checkDependencyTag(d, `edges[${i}].deps[${j}]`));
  });
  input.contract.scenarios.forEach((sc, i) => {
    sc.losses.forEach((l, j) => checkLossDomain(l.domain, `contract.scenarios[${i}].losses[${j}].domain`));
    sc.preceding?.losses.forEach((l, j) =>
      checkLossDomain(l.domain, `contract.scenarios[${i}].preceding.losses[${j}].domain`),
    );
  });
  const m = input.contract.maxHolders;
  if (!Number.isInteger(m) || m < 1 || m > 10)
    throw new PolicyInputError("contract.maxHolders", "must be an integer from 1 to 10");
}

interface Ctx {
  input: PlacementInput;
  siteOf: Map<string, Site>;
  cand: Map<string, PlacementCandidate>;
  edge: Map<string, MeasuredEdge>;
}

function nodeSite(ctx: Ctx, node: string): string {
  return node === SOURCE ? ctx.input.source.site : ctx.cand.get(node)!.site;
}

function edgeBetween(ctx: Ctx, a: string, b: string): MeasuredEdge | undefined {
  const sa = nodeSite(ctx, a);
  const sb = nodeSite(ctx, b);
  return ctx.edge.get(pairKey(sa, sb));
}

function edgePrice(e: MeasuredEdge): number {
  return e.charges.reduce((a, c) => a + c.usdPerGB, 0);
}

function oneWayMs(e: MeasuredEdge): number {
  // Worst-case one-way capture delay: half the round trip plus jitter.
  return e.rttMs / 2 + e.jitterMs;
}

/** Worst loss kind each site suffers from `losses`. */
function siteHits(ctx: Ctx, losses: readonly Loss[]): Map<string, LossKind> {
  const hit = new Map<string, LossKind>();
  for (const s of ctx.input.sites) {
    const d = siteDomains(s);
    let k: LossKind | undefined;
    for (const l of losses) if (d.has(l.domain)) k = worseLoss(k, l.kind);
    if (k) hit.set(s.id, k);
  }
  return hit;
}

/** Whether a holder's retained bytes survive (protected RAM is assumed qualified at placement time). */
function holderSurvives(residency: Residency, kind: LossKind | undefined): boolean {
  if (kind === undefined) return true;
  if (kind === LossKind.partition || kind === LossKind.siteDestruction) return false;
  return residency !== "ram";
}

/** Whether an edge keeps carrying traffic after `losses`. */
function edgeAlive(ctx: Ctx, e: MeasuredEdge, hits: Map<string, LossKind>, losses: readonly Loss[]): boolean {
  if (hits.has(e.from) || hits.has(e.to)) return false;
  return !e.deps.some((d) => losses.some((l) => l.domain === d));
}

type Tree = Map<string, string>; // child → parent

function shapeOf(tree: Tree): GraphShape {
  const parents = [...tree.values()];
  if (parents.every((p) => p === SOURCE)) return tree.size === 1 ? GraphShape.direct : GraphShape.parallel;
  return GraphShape.waypoint;
}

function pathTo(tree: Tree, node: string): string[] {
  const out: string[] = [];
  let n = node;
  while (n !== SOURCE) {
    out.push(n);
    n = tree.get(n)!;
  }
  out.push(SOURCE);
  return out.reverse();
}

type Scenario = Ctx["input"]["contract"]["scenarios"][number];

/**
 * The tree's edges with their delays from the source, or null when an edge, a disk holder's drain or
 * a sender's fan-out cannot carry the stream.
 */
function placeEdges(ctx: Ctx, tree: Tree): { edges: PlacedEdge[]; delay: Map<string, number> } | null {
  const { input } = ctx;
  const rate = input.streamBytesPerSec;
  const delay = new Map<string, number>([[SOURCE, 0]]);
  const order = [...tree.keys()].sort((a, b) => pathTo(tree, a).length - pathTo(tree, b).length || (a < b ? -1 : 1));
  const edges: PlacedEdge[] = [];
  const fanOut = new Map<string, number>();
  for (const child of order) {
    const parent = tree.get(child)!;
    const e = edgeBetween(ctx, parent, child)!;
    if (e.bandwidthBytesPerSec < rate) return null;
    const c = ctx.cand.get(child)!;
    if (c.residency === "disk" && c.drainBytesPerSec < rate) return null;
    fanOut.set(parent, (fanOut.get(parent) ?? 0) + 1);
    delay.set(child, delay.get(parent)! + oneWayMs(e));
    edges.push({
      from: parent,
      to: child,
      delayMs: delay.get(child)! - delay.get(parent)!,
      monthlyUsd: legMonthlyCost(rate, edgePrice(e), input.contract.days),
      legs: e.charges.length,
    });
  }
  for (const [n, k] of fanOut) {
    const send = n === SOURCE ? input.source.sendBytesPerSec : ctx.cand.get(n)!.sendBytesPerSec;
    if (send < k * rate) return null;
  }
  return { edges, delay };
}

/** Per holder, what its feed depends on: the holders it is fed through and every edge's dependencies. */
function feedDependenciesOf(ctx: Ctx, tree: Tree, holders: readonly string[]): Record<string, string[]> {
  const feedDependencies: Record<string, string[]> = {};
  for (const h of holders) {
    const p = pathTo(tree, h);
    const deps = new Set<string>();
    for (let i = 1; i < p.length; i++) {
      if (i < p.length - 1) deps.add(`holder:${p[i]}`);
      for (const d of edgeBetween(ctx, p[i - 1]!, p[i]!)!.deps) deps.add(d);
    }
    feedDependencies[h] = [...deps].sort();
  }
  return feedDependencies;
}

/** Whether the tree covers one scenario, and the lag (ms) of what survives it. */
function scenarioCoverage(
  ctx: Ctx,
  tree: Tree,
  holders: readonly string[],
  delay: ReadonlyMap<string, number>,
  sc: Scenario,
) {
  const { input } = ctx;
  const hits = siteHits(ctx, sc.losses);
  // The writer's own WAL is on its disk: if that survives, nothing acknowledged is lost.
  const srcKind = hits.get(input.source.site);
  if (srcKind === undefined || srcKind === LossKind.crash || srcKind === LossKind.powerLoss) {
    return { name: sc.name, required: sc.required, covered: true, lagMs: 0 };
  }
  // Holders unfed since a preceding loss cut their path have fallen behind by the interval.
  const staleBy = new Map<string, number>();
  if (sc.preceding) {
    const pre = siteHits(ctx, sc.preceding.losses);
    for (const h of holders) {
      const p = pathTo(tree, h);
      const cut = p.some((n, i) => {
        if (i === 0) return false; // a lost writer stops writing: nothing new to fall behind on
        const up = edgeBetween(ctx, p[i - 1]!, n)!;
        return !edgeAlive(ctx, up, pre, sc.preceding!.losses) || (n !== h && pre.has(ctx.cand.get(n)!.site));
      });
      if (cut) staleBy.set(h, sc.preceding.intervalSec * 1000);
    }
  }
  const alive = holders.filter((h) => {
    const c = ctx.cand.get(h)!;
    const pre = sc.preceding ? siteHits(ctx, sc.preceding.losses).get(c.site) : undefined;
    return holderSurvives(c.residency, pre) && holderSurvives(c.residency, hits.get(c.site));
  });
  const lagOf = (h: string) => delay.get(h)! + (staleBy.get(h) ?? 0);
  const bases = alive.filter((h) => ctx.cand.get(h)!.holdsBase);
  if (bases.length === 0) return { name: sc.name, required: sc.required, covered: false, lagMs: null };
  // Start from the freshest full-history store, then splice in tails that reach back to it.
  let lag = Math.min(...bases.map(lagOf));
  for (let changed = true; changed;) {
    changed = false;
    for (const h of alive) {
      const l = lagOf(h);
      if (l < lag && l + ctx.cand.get(h)!.retentionMs >= lag) {
        lag = l;
        changed = true;
      }
    }
  }
  return { name: sc.name, required: sc.required, covered: lag <= sc.maxLagMs, lagMs: lag };
}

/** Scores a tree against the contract; returns null when it violates a bandwidth limit. */
function scoreTree(ctx: Ctx, tree: Tree): CustodyGraph | null {
  const placed = placeEdges(ctx, tree);
  if (placed === null) return null;
  const { edges, delay } = placed;
  const holders = [...tree.keys()].sort();
  const feedDependencies = feedDependenciesOf(ctx, tree, holders);
  const scenarios = ctx.input.contract.scenarios.map((sc) => scenarioCoverage(ctx, tree, holders, delay, sc));
  const monthlyUsd =
    edges.reduce((a, e) => a + e.monthlyUsd, 0) + holders.reduce((a, h) => a + ctx.cand.get(h)!.monthlyUsd, 0);
  return {
    shape: shapeOf(tree),
    holders,
    edges,
    monthlyUsd,
    scenarios,
    feedDependencies,
    meetsContract: scenarios.every((s) => !s.required || s.covered),
  };
}

/** Grows a tree from the source over `members`, each step taking the edge `rank` likes best. */
function growTree(
  ctx: Ctx,
  members: readonly string[],
  rank: (e: MeasuredEdge, parentDelay: number) => number,
): Tree | null {
  const tree: Tree = new Map();
  const delay = new Map<string, number>([[SOURCE, 0]]);
  const left = new Set(members);
  while (left.size > 0) {
    let best: { p: string; c: string; score: number; e: MeasuredEdge } | undefined;
    for (const p of [SOURCE, ...tree.keys()]) {
      for (const c of [...left].sort()) {
        const e = edgeBetween(ctx, p, c);
        if (!e || e.bandwidthBytesPerSec < ctx.input.streamBytesPerSec) continue;
        const score = rank(e, delay.get(p)!);
        if (!best || score < best.score) best = { p, c, score, e };
      }
    }
    if (!best) return null;
    tree.set(best.c, best.p);
    delay.set(best.c, delay.get(best.p)! + oneWayMs(best.e));
    left.delete(best.c);
  }
  return tree;
}

/** Every tree (parent assignment without cycles) over `members`; only used for small subsets. */
function allTrees(ctx: Ctx, members: readonly string[]): Tree[] {
  const out: Tree[] = [];
  const parents = new Map<string, string>();
  const reachesSource = (n: string): boolean => {
    const seen = new Set<string>();
    while (n !== SOURCE) {
      if (seen.has(n)) return false;
      seen.add(n);
      n = parents.get(n)!;
    }
    return true;
  };
  const assign = (i: number) => {
    if (i === members.length) {
      if (members.every(reachesSource)) out.push(new Map(parents));
      return;
    }
    const child = members[i]!;
    for (const p of [SOURCE, ...members]) {
      if (p === child || !edgeBetween(ctx, p, child)) continue;
      parents.set(child, p);
      assign(i + 1);
    }
    parents.delete(child);
  };
  assign(0);
  return out;
}

/** Subsets up to this size are searched exhaustively (at most 4^4 trees each); larger ones by heuristics. */
const EXHAUSTIVE_UP_TO = 4;

function better(a: CustodyGraph, b: CustodyGraph | undefined): boolean {
  if (!b) return true;
  if (a.meetsContract !== b.meetsContract) return a.meetsContract;
  if (Math.abs(a.monthlyUsd - b.monthlyUsd) > 1e-9) return a.monthlyUsd < b.monthlyUsd;
  if (a.holders.length !== b.holders.length) return a.holders.length < b.holders.length;
  const lag = (g: CustodyGraph) => g.scenarios.reduce((s, x) => s + (x.lagMs ?? 1e12), 0);
  if (lag(a) !== lag(b)) return lag(a) < lag(b);
  return JSON.stringify(a.edges) < JSON.stringify(b.edges);
}

/**
 * Chooses a custody graph (1 to `maxHolders` holders) meeting every required scenario at the
 * lowest monthly cost (transfer legs plus holder cost). Every subset of up to 4 holders is searched
 * exhaustively (every direct, waypoint and parallel tree); larger subsets try a direct fan-out, a
 * cheapest-edge tree (transfer once across an expensive boundary, then fan out locally) and a
 * fastest tree. It reports the best of each shape. Pure and deterministic. Throws
 * PolicyInputError for bad input and InfeasiblePlacementError when nothing meets the contract.
 */
export function placeCustody(input: PlacementInput): PlacementResult {
  validatePlacement(input);
  const ctx: Ctx = {
    input,
    siteOf: new Map(input.sites.map((s) => [s.id, s])),
    cand: new Map(input.candidates.map((c) => [c.id, c])),
    edge: new Map(input.edges.map((e) => [pairKey(e.from, e.to), e])),
  };
  const ids = input.candidates.map((c) => c.id).sort();
  const byShape: Partial<Record<GraphShape, CustodyGraph>> = {};
  let chosen: CustodyGraph | undefined;
  let considered = 0;
  const seen = new Set<string>();
  for (let mask = 1; mask < 1 << ids.length; mask++) {
    const members = ids.filter((_, i) => mask & (1 << i));
    if (members.length > input.contract.maxHolders) continue;
    const trees: (Tree | null)[] = [
      members.every((m) => edgeBetween(ctx, SOURCE, m)) ? new Map(members.map((m) => [m, SOURCE])) : null,
      growTree(ctx, members, (e) => edgePrice(e) * 1e6 + oneWayMs(e)),
      growTree(ctx, members, (e, d) => d + oneWayMs(e)),
      ...(members.length <= EXHAUSTIVE_UP_TO ? allTrees(ctx, members) : []),
    ];
    for (const tree of trees) {
      if (!tree) continue;
      const key = [...tree].sort().join(";");
      if (seen.has(key)) continue;
      seen.add(key);
      const g = scoreTree(ctx, tree);
      considered++;
      if (!g || !g.meetsContract) continue;
      if (better(g, byShape[g.shape])) byShape[g.shape] = g;
      if (better(g, chosen)) chosen = g;
    }
  }
  if (!chosen)
    throw new InfeasiblePlacementError("no custody graph among the candidates meets every required scenario", {
      graphsConsidered: considered,
    });
  return { chosen, byShape, graphsConsidered: considered };
}
