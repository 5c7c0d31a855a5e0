import { RangeSet } from "../../lanes/index.ts";
import type { Holding } from "../../custody/index.ts";
import {
  Residency,
  type CommitRun,
  type EvaluationState,
  type Holder,
  type PendingForward,
  type PitrPin,
  type RecoveryInFlight,
  type RetainedClaim,
} from "../../policies/index.ts";
import type { VolumeTopology } from "./controller-config.ts";
import { HoldKind } from "../../custody/index.ts";
import type { Holds } from "../../custody/index.ts";
import { heldByRetention } from "./retention-window.ts";
import { receiptedImageManifests, receiptedManifests } from "./receipted-manifests.ts";

/** What the writer has reported: per lane, its head and commit runs. */
export interface SourceProgress {
  readonly heads: Readonly<Record<string, number>>;
  readonly commits: readonly CommitRun[];
}

/** What evaluation takes besides holdings and writer progress: work in flight and the controller's own findings. */
export interface EvaluationExtra {
  forwards?: readonly PendingForward[];
  recoveries?: readonly RecoveryInFlight[];
  pins?: readonly PitrPin[];
  protectedOverBound?: ReadonlySet<string>;
  /** When sequences without a commit run count as committed, for the retention window (default: never held). */
  retentionUnknownCommittedAtMs?: number;
  /** When sequences without a commit run were first seen retained (see CommitSightings), for the retention window. */
  retentionSightings?: readonly CommitRun[];
}

/**
 * Builds the policy engine's input from verified holdings (ledger), writer progress and the
 * static topology. Pure. Holders the control log marked failed contribute nothing (their memory is
 * gone); released ranges are already subtracted by the ledger.
 */
export function buildEvaluationState(
  topo: VolumeTopology,
  holdings: readonly Holding[],
  progress: SourceProgress,
  asOfMs: number,
  failed: ReadonlySet<string>,
  extra: EvaluationExtra = {},
): EvaluationState {
  const { claims, images } = holdersClaims(topo, holdings, progress, asOfMs, failed, extra);
  const holders: Holder[] = [...claims.entries()].map(([id, c]) => ({
    id,
    site: topo.holderSites[id]!,
    claims: c,
    ...(images.has(id) ? { coalesced: images.get(id)! } : {}),
  }));
  const fresh = (h: Holding) =>
    !failed.has(h.holderId) && claims.has(h.holderId) && asOfMs - h.issuedAt <= topo.staleAfterMs;
  return {
    volume: topo.volume,
    asOfMs,
    staleAfterMs: topo.staleAfterMs,
    source: { site: topo.writerSite, lanes: laneHeads(topo, holdings, progress) },
    commits: progress.commits,
    sites: topo.sites,
    holders,
    bases: holderBases(topo, holdings, fresh),
    manifests: receiptedManifests(topo.volume, topo.lanes, holdings, fresh),
    ...(topo.coalesced === undefined
      ? {}
      : { coalescedManifests: receiptedImageManifests(topo.volume, topo.coalesced, holdings, fresh) }),
    keyAuthorities: topo.keyAuthorities,
    metadataQuorum: topo.metadataQuorum,
    links: topo.links,
    recovery: topo.recovery,
    forwards: extra.forwards ?? [],
    pins: extra.pins ?? [],
    recoveries: extra.recoveries ?? [],
    scenarios: topo.scenarios,
    timelines: topo.timelines,
    ...(topo.controlPlane === undefined ? {} : { controlPlane: topo.controlPlane }),
  };
}

/**
 * Each configured holder's raw claims (empty for one with nothing to claim) and, apart, its
 * coalesced images, from the holdings of this volume by holders not marked failed.
 */
function holdersClaims(
  topo: VolumeTopology,
  holdings: readonly Holding[],
  progress: SourceProgress,
  asOfMs: number,
  failed: ReadonlySet<string>,
  extra: EvaluationExtra,
): { claims: Map<string, RetainedClaim[]>; images: Map<string, RetainedClaim[]> } {
  const claims = new Map<string, RetainedClaim[]>();
  for (const id of Object.keys(topo.holderSites)) claims.set(id, []);
  const images = new Map<string, RetainedClaim[]>();
  for (const h of holdings) {
    if (h.volume !== topo.volume || failed.has(h.holderId) || !claims.has(h.holderId) || h.retained.isEmpty) continue;
    if (h.representation === "coalesced") {
      const image = coalescedClaim(topo, h);
      if (image !== undefined) images.set(h.holderId, [...(images.get(h.holderId) ?? []), image]);
      continue;
    }
    claims.get(h.holderId)!.push(...retentionSplit(topo, progress, h, rawClaim(topo, h, asOfMs, extra), asOfMs, extra));
  }
  return { claims, images };
}

/** The raw claim a holding states. */
function rawClaim(topo: VolumeTopology, h: Holding, asOfMs: number, extra: EvaluationExtra): RetainedClaim {
  // A claim is as fresh as the receipt that states it (the holder was alive and holding then);
  // protected RAM additionally needs its hold-up capability measured recently enough.
  const capabilityAgeMs = asOfMs - h.evidenceAt;
  return {
    lane: h.lane,
    ranges: h.retained,
    residency: h.residency,
    evidence: { kind: "observed", atMs: h.issuedAt },
    protectedRamValid:
      h.residency === "protected_ram"
        ? capabilityAgeMs <= (topo.protectedEvidenceMaxAgeMs ?? topo.staleAfterMs) &&
          !(extra.protectedOverBound?.has(h.holderId) ?? false)
        : undefined,
  };
}

/**
 * `claim` of holding `h` split at the contract's retention window: inside it the claim must be
 * kept, so its part there carries the window's end (the release rule refuses it until then).
 */
function retentionSplit(
  topo: VolumeTopology,
  progress: SourceProgress,
  h: Holding,
  claim: RetainedClaim,
  asOfMs: number,
  extra: EvaluationExtra,
): RetainedClaim[] {
  const w = topo.retention;
  const inWindow = w !== undefined && (w.holders === undefined || w.holders.includes(h.holderId));
  const { held, untilMs } = inWindow
    ? heldByRetention(
        w,
        progress.commits,
        h.lane,
        h.retained,
        asOfMs,
        extra.retentionUnknownCommittedAtMs ?? -Infinity,
        extra.retentionSightings,
      )
    : { held: RangeSet.EMPTY, untilMs: 0 };
  if (held.isEmpty) return [claim];
  const rest = h.retained.subtract(held);
  return [{ ...claim, ranges: held, retainUntilMs: untilMs }, ...(rest.isEmpty ? [] : [{ ...claim, ranges: rest }])];
}

/**
 * The configured bases and those materialized beside a holder (rolling bases), as its fresh
 * receipts name them: like a disk claim at that holder's site, covering its lane through the base's cut.
 */
function holderBases(
  topo: VolumeTopology,
  holdings: readonly Holding[],
  fresh: (h: Holding) => boolean,
): EvaluationState["bases"] {
  const bases = new Map(topo.bases.map((b) => [b.id, b]));
  for (const h of holdings) {
    if (h.volume !== topo.volume || !fresh(h)) continue;
    for (const b of h.receipt.payload.manifest.baseSnapshots) {
      if (b.volume !== topo.volume) continue;
      const id = `${h.holderId}/${b.snapshotId}`;
      const prev = bases.get(id);
      bases.set(id, { id, holder: h.holderId, cut: { ...prev?.cut, [h.lane]: b.throughSeq }, bytes: prev?.bytes ?? 0 });
    }
  }
  return [...bases.values()];
}

/**
 * Each lane's head. What was written is at least what anyone receipted: a controller that
 * restarted after the writer was lost still knows the head from the holders (writer progress is
 * not durable).
 */
function laneHeads(
  topo: VolumeTopology,
  holdings: readonly Holding[],
  progress: SourceProgress,
): Record<string, number> {
  const lanes: Record<string, number> = {};
  for (const l of topo.lanes) lanes[l] = progress.heads[l] ?? 0;
  for (const h of holdings)
    if (h.volume === topo.volume && h.lane in lanes && h.retained.max !== undefined)
      lanes[h.lane] = Math.max(lanes[h.lane]!, h.retained.max);
  // ...and a coalesced window's end was written too (the images' cut is never cut off inside a window).
  for (const h of holdings) {
    const raw = topo.coalesced?.[h.lane];
    const p = h.receipt.payload;
    if (h.volume === topo.volume && raw !== undefined && raw in lanes && p.representation === "coalesced")
      lanes[raw] = Math.max(lanes[raw]!, p.sourceCutSeq);
  }
  return lanes;
}

/**
 * A coalesced holding as an image of its raw lane: its ranges through the receipt's source cut
 * (a window end), or nothing when the topology names no raw lane for it. Never a raw claim.
 */
function coalescedClaim(topo: VolumeTopology, h: Holding): RetainedClaim | undefined {
  const lane = topo.coalesced?.[h.lane];
  const p = h.receipt.payload;
  if (lane === undefined || p.representation !== "coalesced") return undefined;
  return {
    lane,
    ranges: h.retained.intersect(RangeSet.of(0, p.sourceCutSeq)),
    residency: h.residency,
    evidence: { kind: "observed", atMs: h.issuedAt },
  };
}

/**
 * Release candidates: for each releasable holder and lane, the retained ranges a base contains or
 * some other holder also holds — a successor is necessary, so nothing else is worth asking about.
 * They come as up to three requests, judged separately so the part that is safe now is never held
 * back by the part that is not: what a base contains, what another holder has on disk, and what
 * others hold only in RAM (typically the newest sequences, not yet durable anywhere else).
 * A durable holder (one that persists: it has, or once had, disk claims; `durable` names those the
 * caller remembers) is offered only the first two: releasing a store's copy onto RAM copies moves
 * custody to a weaker tier and can wedge the network — the RAM holders then hold the only copies,
 * cannot release them, fill up, and the store can build no base across the hole. Pure.
 */
export function releaseCandidates(
  state: EvaluationState,
  releasable: readonly string[],
  durable: ReadonlySet<string> = new Set(),
  held: { readonly pins: readonly PitrPin[]; readonly recoveries: readonly RecoveryInFlight[] } = {
    pins: [],
    recoveries: [],
  },
): { holder: string; lane: string; ranges: RangeSet }[] {
  const baseThrough = (lane: string) => state.bases.reduce((m, b) => Math.max(m, b.cut[lane] ?? -1), -1);
  const isDurable = (id: string) =>
    durable.has(id) || state.holders.some((h) => h.id === id && h.claims.some((c) => c.residency === Residency.disk));
  const out: { holder: string; lane: string; ranges: RangeSet }[] = [];
  for (const id of releasable) {
    const me = state.holders.find((h) => h.id === id);
    if (me === undefined) continue;
    for (const lane of Object.keys(state.source.lanes)) {
      let mine = RangeSet.EMPTY;
      for (const c of me.claims) if (c.lane === lane) mine = mine.union(c.ranges);
      // Ranges the control log holds here (PITR pins, registered recoveries) are not asked about:
      // a request that included them would be refused whole and hold back the part that may go.
      for (const p of held.pins) if (p.holder === id && p.lane === lane) mine = mine.subtract(p.ranges);
      for (const r of held.recoveries)
        if (r.lane === lane && (r.sources === undefined || r.sources.includes(id))) mine = mine.subtract(r.ranges);
      // Likewise what a retention window still keeps here.
      for (const c of me.claims)
        if (c.lane === lane && c.retainUntilMs !== undefined && c.retainUntilMs > state.asOfMs)
          mine = mine.subtract(c.ranges);
      if (mine.isEmpty) continue;
      let onDisk = RangeSet.EMPTY;
      let anywhere = RangeSet.EMPTY;
      for (const h of state.holders) {
        if (h.id === id) continue;
        for (const c of h.claims) {
          if (c.lane !== lane) continue;
          anywhere = anywhere.union(c.ranges);
          if (c.residency === Residency.disk) onDisk = onDisk.union(c.ranges);
        }
      }
      // What a base already contains needs no WAL anywhere (the release rule still checks the base survives).
      const through = baseThrough(lane);
      const inBase = through >= 0 ? mine.intersect(RangeSet.of(0, through)) : RangeSet.EMPTY;
      const elsewhereOnDisk = mine.intersect(onDisk).subtract(inBase);
      const elsewhereInRam = isDurable(id)
        ? RangeSet.EMPTY
        : mine.intersect(anywhere).subtract(inBase).subtract(elsewhereOnDisk);
      for (const ranges of [inBase, elsewhereOnDisk, elsewhereInRam])
        if (!ranges.isEmpty) out.push({ holder: id, lane, ranges });
    }
  }
  return out;
}

/**
 * The control log's holds on `volume` as the policy engine's pins and recoveries: a PITR pin binds
 * each named holder (every holder when none is named), a registered recovery reads from its named
 * sources (anyone when none is named). Pure.
 */
export function holdsAsPolicy(
  holds: Holds,
  volume: string,
  holderIds: readonly string[],
): { pins: PitrPin[]; recoveries: RecoveryInFlight[] } {
  const pins: PitrPin[] = [];
  const recoveries: RecoveryInFlight[] = [];
  for (const h of Object.values(holds)) {
    if (h.volume !== volume) continue;
    if (h.kind === HoldKind.recovery)
      recoveries.push({
        id: h.holdId,
        lane: h.lane,
        ranges: h.ranges,
        sources: h.holders.length > 0 ? h.holders : undefined,
      });
    else
      for (const holder of h.holders.length > 0 ? h.holders : holderIds)
        pins.push({ id: h.holdId, holder, lane: h.lane, ranges: h.ranges });
  }
  return { pins, recoveries };
}
