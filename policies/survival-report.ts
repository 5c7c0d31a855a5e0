import { RangeSet } from "../lanes/index.ts";
import type { BaseSnapshot, EvaluationState, EvidenceLabel } from "./evaluation-state.ts";
import { tallyCommits } from "./commit-log.ts";
import { widestPathsTo } from "./network-paths.ts";
import { recoveryTime, type RecoveryTime } from "./recovery-time.ts";
import type { AllowedLoss } from "./scenario.ts";
import { evidenceLabel, liveRanges, siteDiskSurvives, siteUsable, type SurvivorView } from "./survivor-view.ts";
import { manifestSurvives } from "./manifest-survival.ts";
import { controlPlaneSurvival, type ControlPlaneFinding } from "./control-plane.ts";

/** Flags a survival report can carry. */
export const SurvivalFlag = {
  noBase: "no_base",
  noKeyPath: "no_key_path",
  isolatedHolder: "isolated_holder",
  destinationLost: "destination_lost",
  writableActivationBlocked: "writable_activation_blocked",
  protectedRamUnproven: "protected_ram_unproven",
  deadlineMissed: "deadline_missed",
  lostBytesUnknown: "lost_bytes_unknown",
  controlPlaneLost: "control_plane_lost",
} as const;
export type SurvivalFlag = (typeof SurvivalFlag)[keyof typeof SurvivalFlag];

/**
 * What survives one scenario (or timeline): the newest acknowledged cut that can be rebuilt, what
 * committed work is lost and how old it is, and how long until the volume is usable at the destination.
 */
export interface SurvivalReport {
  readonly name: string;
  readonly kind: "scenario" | "timeline";
  readonly required: boolean;
  /** Lane → last recoverable sequence; null when nothing can be rebuilt. */
  readonly cut: Record<string, number> | null;
  /**
   * The stream the cut comes from: `raw` (the original log) or `coalesced` (a derived image whose
   * cut is a window end; the raw records before it are not held). See coalesced-cut.ts.
   */
  readonly stream: CutStream;
  readonly base: string | null;
  readonly manifest: string | null;
  readonly keyAuthority: string | null;
  /** Holders whose ranges the cut relies on, sorted. */
  readonly contributors: string[];
  /** Lane → lost acknowledged ranges. */
  readonly lost: Record<string, [number, number][]>;
  readonly lostSeqs: number;
  readonly lostBytes: number;
  /** Age of the oldest lost committed work at `asOfMs` (0 when nothing is lost). */
  readonly oldestLostAgeMs: number;
  readonly destination: string;
  /** Null when recovery time is unbounded (isolated data, lost destination, nothing to rebuild). */
  readonly timeToUsable: RecoveryTime | null;
  readonly deadlineSec: number;
  readonly meetsDeadline: boolean;
  readonly evidence: EvidenceLabel;
  readonly flags: SurvivalFlag[];
  /**
   * What of the control plane survives (control-log quorum, a controller, the key authority);
   * present only when the state places the control plane (`controlPlane`).
   */
  readonly controlPlane?: ControlPlaneFinding | undefined;
  /** Whether the scenario's contract holds: its allowed loss, deadline, evidence and activation. */
  readonly verdict: Verdict;
  /** Why it is `not_met` (empty when met), one short sentence each. */
  readonly reasons: string[];
}

/** Which stream a report's cut comes from. */
export const CutStream = { raw: "raw", coalesced: "coalesced" } as const;
export type CutStream = (typeof CutStream)[keyof typeof CutStream];

/** A report's verdict. */
export const Verdict = { met: "met", notMet: "not_met" } as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** What the caller knows about the scenario being reported. */
export interface ReportMeta {
  readonly name: string;
  readonly kind: "scenario" | "timeline";
  readonly required: boolean;
  readonly deadlineSec: number;
  readonly destination?: string | undefined;
  readonly allowedLoss?: AllowedLoss | undefined;
}

/**
 * The verdict of one report against its contract (pure): the loss must stay within `allowed`
 * (no acknowledged write when absent), the volume must be usable by the deadline, the evidence
 * must be observed and fresh (and protected RAM proven), a key path must survive, and a writable
 * activation must be possible.
 */
export function verdictOf(
  r: Omit<SurvivalReport, "verdict" | "reasons">,
  allowed: AllowedLoss | undefined,
): { verdict: Verdict; reasons: string[] } {
  const reasons = lossReasons(
    {
      seqs: r.lostSeqs,
      bytes: r.lostBytes,
      bytesUnknown: r.flags.includes(SurvivalFlag.lostBytesUnknown),
      oldestAgeMs: r.oldestLostAgeMs,
    },
    allowed,
  );
  if (r.cut === null) reasons.push("nothing can be rebuilt");
  if (!r.meetsDeadline)
    reasons.push(
      r.timeToUsable === null
        ? "recovery time unbounded"
        : `usable after ${r.timeToUsable.totalSec.toFixed(1)} s, deadline ${r.deadlineSec} s`,
    );
  if (r.evidence !== "observed") reasons.push(`evidence is ${r.evidence.replace("_", " ")}`);
  if (r.flags.includes(SurvivalFlag.protectedRamUnproven)) reasons.push("protected RAM without valid hold-up evidence");
  if (r.flags.includes(SurvivalFlag.noKeyPath)) reasons.push("no key authority survives");
  if (r.flags.includes(SurvivalFlag.writableActivationBlocked))
    reasons.push("writable activation blocked (metadata quorum lost)");
  if (r.flags.includes(SurvivalFlag.isolatedHolder)) reasons.push("some surviving data is only on partitioned holders");
  // Nothing can be committed, read or acted on without the control plane, whatever the data says.
  if (r.controlPlane?.reason) reasons.push(r.controlPlane.reason);
  return { verdict: reasons.length === 0 ? Verdict.met : Verdict.notMet, reasons };
}

/** Some acknowledged writes a report would lose: how many, their bytes (unless unknown) and the oldest one's age. */
export interface LossFigures {
  readonly seqs: number;
  readonly bytes: number;
  /** Some of them have no commit record: their bytes are not known. */
  readonly bytesUnknown: boolean;
  readonly oldestAgeMs: number;
}

/**
 * Why a loss breaks `allowed` (no acknowledged write when absent), one sentence per limit it
 * exceeds; empty when it stays within every stated limit. Pure.
 */
export function lossReasons(loss: LossFigures, allowed: AllowedLoss | undefined): string[] {
  const reasons: string[] = [];
  const maxSeqs = allowed === undefined ? 0 : allowed.seqs;
  if (maxSeqs !== undefined && loss.seqs > maxSeqs)
    reasons.push(`loses ${loss.seqs} acknowledged write${loss.seqs === 1 ? "" : "s"}, ${maxSeqs} allowed`);
  if (allowed?.bytes !== undefined) {
    if (loss.bytesUnknown) reasons.push("lost bytes unknown (no commit record for some lost writes)");
    else if (loss.bytes > allowed.bytes) reasons.push(`loses ${loss.bytes} bytes, ${allowed.bytes} allowed`);
  }
  if (allowed?.ageSec !== undefined && loss.oldestAgeMs > allowed.ageSec * 1000)
    reasons.push(`oldest lost write is ${(loss.oldestAgeMs / 1000).toFixed(1)} s old, ${allowed.ageSec} s allowed`);
  return reasons;
}

const LABEL_RANK: Record<EvidenceLabel, number> = { observed: 0, admitted_bound: 1, stale: 2 };

interface CutChoice {
  cut: Record<string, number>;
  base: BaseSnapshot;
  manifest: string | null;
}

export function cutWeight(cut: Record<string, number>): number {
  return Object.values(cut).reduce((a, b) => a + b, 0);
}

/**
 * The newest rebuildable cut: per surviving base, extend each lane contiguously, then make it
 * consistent. The system's one computation of the surviving cut; the simulator's oracle
 * (sim/invariants.ts `survivingCut`) and the demo timeline (tools/demo/custody-timeline.ts) re-derive it
 * independently on purpose, from ground truth and from sampled holder state respectively.
 */
function chooseCut(state: EvaluationState, view: SurvivorView, destination: string): CutChoice | null {
  const lanes = Object.keys(state.source.lanes).sort();
  const live = new Map(lanes.map((l) => [l, liveRanges(view, l)]));
  const manifests = state.manifests.filter((m) => manifestSurvives(state, view, m));
  let best: CutChoice | null = null;
  // Among equal cuts, a base already at the destination wins (nothing to ship), then the lower id.
  const atDest = (b: BaseSnapshot) => (state.holders.find((h) => h.id === b.holder)?.site === destination ? 0 : 1);
  const bases = [...state.bases].sort((a, b) => atDest(a) - atDest(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const base of bases) {
    const holder = state.holders.find((h) => h.id === base.holder);
    if (!holder || !siteDiskSurvives(view, holder.site)) continue;
    const reach: Record<string, number> = {};
    for (const l of lanes) {
      const b = base.cut[l] ?? -1;
      const acked = state.source.lanes[l]!;
      reach[l] = Math.min(acked, Math.max(b, live.get(l)!.contiguousThrough(b + 1)));
    }
    let choice: CutChoice;
    if (lanes.length <= 1) choice = { cut: reach, base, manifest: null };
    else {
      // A cut across lanes needs a surviving consistency manifest; the base itself is one.
      choice = { cut: Object.fromEntries(lanes.map((l) => [l, base.cut[l] ?? -1])), base, manifest: null };
      for (const m of manifests) {
        const fits = lanes.every((l) => (m.cut[l] ?? -1) >= (base.cut[l] ?? -1) && (m.cut[l] ?? -1) <= reach[l]!);
        if (fits && cutWeight(m.cut) > cutWeight(choice.cut)) {
          choice = { cut: Object.fromEntries(lanes.map((l) => [l, m.cut[l] ?? -1])), base, manifest: m.id };
        }
      }
    }
    if (best === null || cutWeight(choice.cut) > cutWeight(best.cut)) best = choice;
  }
  return best;
}

/** Committed work past the cut (all of it without one), from the source's own commit timestamps. */
function lostWork(
  state: EvaluationState,
  lanes: readonly string[],
  choice: CutChoice | null,
  flags: Set<SurvivalFlag>,
): { lost: Record<string, [number, number][]>; lostSeqs: number; lostBytes: number; oldestLostAgeMs: number } {
  const lost: Record<string, [number, number][]> = {};
  let lostSeqs = 0;
  let lostBytes = 0;
  let oldest: number | null = null;
  for (const l of lanes) {
    const acked = state.source.lanes[l]!;
    const from = (choice?.cut[l] ?? -1) + 1;
    const gone = from <= acked ? RangeSet.of(from, acked) : RangeSet.EMPTY;
    lost[l] = gone.toJSON();
    const t = tallyCommits(state.commits, l, gone);
    lostSeqs += t.seqs;
    lostBytes += t.bytes;
    if (t.unknownSeqs > 0) flags.add(SurvivalFlag.lostBytesUnknown);
    if (t.oldestCommittedAtMs !== null && (oldest === null || t.oldestCommittedAtMs < oldest))
      oldest = t.oldestCommittedAtMs;
  }
  const oldestLostAgeMs = lostSeqs === 0 || oldest === null ? 0 : Math.max(0, state.asOfMs - oldest);
  return { lost, lostSeqs, lostBytes, oldestLostAgeMs };
}

type WidestPaths = ReturnType<typeof widestPathsTo>;

/**
 * Covers `need` of lane `l` with surviving claims, observed ones first, then admitted bounds, then
 * stale ones (within a label, copies already at the destination first); adds the holders used to
 * `contributors` and returns the weakest evidence used so far (starting from `evidence`).
 */
function coverWithEvidence(
  state: EvaluationState,
  view: SurvivorView,
  l: string,
  need: RangeSet,
  destination: string,
  contributors: Set<string>,
  evidence: EvidenceLabel,
): EvidenceLabel {
  const atDest = (site: string) => (site === destination ? 0 : 1);
  const ranked = view.claims
    .filter((lc) => lc.claim.lane === l)
    .map((lc) => ({ lc, label: evidenceLabel(lc.claim, state.asOfMs, state.staleAfterMs) }))
    .sort(
      (x, y) =>
        LABEL_RANK[x.label] - LABEL_RANK[y.label] ||
        atDest(x.lc.site) - atDest(y.lc.site) ||
        (x.lc.holder < y.lc.holder ? -1 : 1),
    );
  let uncovered = need;
  for (const { lc, label } of ranked) {
    if (!uncovered.intersects(lc.claim.ranges)) continue;
    uncovered = uncovered.subtract(lc.claim.ranges);
    contributors.add(lc.holder);
    if (LABEL_RANK[label] > LABEL_RANK[evidence]) evidence = label;
  }
  return evidence;
}

/**
 * Transfer plan of lane `l`: what the destination lacks of `need` comes from the best-connected
 * live holder (its bytes added to `perHolderBytes`). Returns what no holder with a path has.
 */
function planTransfer(
  state: EvaluationState,
  view: SurvivorView,
  l: string,
  need: RangeSet,
  destination: string,
  paths: WidestPaths,
  perHolderBytes: Map<string, number>,
): RangeSet {
  need = need.subtract(liveRanges(view, l, (lc) => lc.site === destination));
  const sources = view.claims
    .filter((lc) => lc.claim.lane === l && paths.has(lc.site))
    .sort((x, y) => paths.get(y.site)! - paths.get(x.site)! || (x.holder < y.holder ? -1 : 1));
  for (const lc of sources) {
    const take = need.intersect(lc.claim.ranges);
    if (take.isEmpty) continue;
    need = need.subtract(take);
    const bytes = tallyCommits(state.commits, l, take).bytes;
    perHolderBytes.set(lc.holder, (perHolderBytes.get(lc.holder) ?? 0) + bytes);
  }
  return need;
}

/** Time to usable once every byte has a source; sources are fetched one after another over their widest path. */
function transferTime(state: EvaluationState, paths: WidestPaths, perHolderBytes: Map<string, number>): RecoveryTime {
  let transferSec = 0;
  let missingBytes = 0;
  for (const [hid, bytes] of [...perHolderBytes].sort()) {
    const site = state.holders.find((h) => h.id === hid)!.site;
    const bw = paths.get(site)!;
    missingBytes += bytes;
    // Conservative: sources are fetched one after another over their widest path.
    if (bw !== Infinity) transferSec += bytes / bw;
  }
  return recoveryTime(state.recovery, missingBytes, transferSec);
}

/**
 * What recovering `choice` at `destination` relies on: the holders that contribute, the weakest
 * evidence, and the time to usable (null when some of it has no bounded way there).
 */
function recoveryOf(
  state: EvaluationState,
  view: SurvivorView,
  choice: CutChoice,
  destination: string,
  paths: WidestPaths,
  flags: Set<SurvivalFlag>,
): { contributors: Set<string>; evidence: EvidenceLabel; timeToUsable: RecoveryTime | null } {
  const lanes = Object.keys(state.source.lanes).sort();
  const destUsable = siteUsable(view, destination);
  const contributors = new Set<string>();
  let evidence: EvidenceLabel = "observed";
  let bounded = destUsable;
  const perHolderBytes = new Map<string, number>();
  const baseHolder = state.holders.find((h) => h.id === choice.base.holder)!;
  if (baseHolder.site !== destination) {
    if (!paths.has(baseHolder.site)) bounded = false;
    perHolderBytes.set(baseHolder.id, choice.base.bytes);
  }
  for (const l of lanes) {
    const b = choice.base.cut[l] ?? -1;
    const c = choice.cut[l]!;
    if (c <= b) continue;
    const need = RangeSet.of(b + 1, c);
    evidence = coverWithEvidence(state, view, l, need, destination, contributors, evidence);
    if (!planTransfer(state, view, l, need, destination, paths, perHolderBytes).isEmpty) {
      bounded = false; // the remaining ranges sit only on holders with no path to the destination
      if (destUsable) flags.add(SurvivalFlag.isolatedHolder);
    }
  }
  contributors.add(choice.base.holder);
  return { contributors, evidence, timeToUsable: bounded ? transferTime(state, paths, perHolderBytes) : null };
}

/** Builds the report for a view (the state after a scenario's or a timeline's losses). Pure. */
export function reportFromView(state: EvaluationState, view: SurvivorView, meta: ReportMeta): SurvivalReport {
  const flags = new Set<SurvivalFlag>();
  const lanes = Object.keys(state.source.lanes).sort();
  const destination = meta.destination ?? state.recovery.destination;
  const key = [...state.keyAuthorities]
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .find((k) => siteUsable(view, k.site) && !view.tokenLoss.has(`key_authority:${k.id}`));
  let choice = chooseCut(state, view, destination);
  if (choice === null) flags.add(SurvivalFlag.noBase);
  if (key === undefined) {
    flags.add(SurvivalFlag.noKeyPath);
    choice = null; // ciphertext without an authorized key path rebuilds nothing
  }
  if (view.unprovenProtected.length > 0) flags.add(SurvivalFlag.protectedRamUnproven);
  const { lost, lostSeqs, lostBytes, oldestLostAgeMs } = lostWork(state, lanes, choice, flags);

  // Which holders the cut relies on, preferring the best evidence.
  const paths = widestPathsTo(state, view, destination);
  const destUsable = siteUsable(view, destination);
  if (!destUsable) flags.add(SurvivalFlag.destinationLost);
  // Surviving data with no path to a usable destination has no bounded recovery time.
  if (destUsable) for (const lc of view.claims) if (!paths.has(lc.site)) flags.add(SurvivalFlag.isolatedHolder);
  const { contributors, evidence, timeToUsable } =
    choice === null
      ? { contributors: new Set<string>(), evidence: "observed" as EvidenceLabel, timeToUsable: null }
      : recoveryOf(state, view, choice, destination, paths, flags);
  const q = state.metadataQuorum;
  if (q && q.members.filter((m) => !view.siteLoss.has(m)).length < q.quorum)
    flags.add(SurvivalFlag.writableActivationBlocked);
  const meetsDeadline = timeToUsable !== null && timeToUsable.totalSec <= meta.deadlineSec;
  if (!meetsDeadline) flags.add(SurvivalFlag.deadlineMissed);
  const controlPlane =
    state.controlPlane === undefined
      ? undefined
      : controlPlaneSurvival(
          state.controlPlane,
          state.sites,
          view.tokenLoss,
          state.volume,
          state.keyAuthorities,
          key === undefined,
        );
  if (controlPlane !== undefined && controlPlane.lost.length > 0) flags.add(SurvivalFlag.controlPlaneLost);
  const report: Omit<SurvivalReport, "verdict" | "reasons"> = {
    name: meta.name,
    kind: meta.kind,
    required: meta.required,
    cut: choice?.cut ?? null,
    stream: CutStream.raw,
    base: choice?.base.id ?? null,
    manifest: choice?.manifest ?? null,
    keyAuthority: key?.id ?? null,
    contributors: [...contributors].sort(),
    lost,
    lostSeqs,
    lostBytes,
    oldestLostAgeMs,
    destination,
    timeToUsable,
    deadlineSec: meta.deadlineSec,
    meetsDeadline,
    evidence,
    flags: [...flags].sort(),
    ...(controlPlane === undefined ? {} : { controlPlane }),
  };
  return { ...report, ...verdictOf(report, meta.allowedLoss) };
}
