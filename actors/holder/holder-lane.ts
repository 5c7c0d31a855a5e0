import type { ActorRefFrom } from "xstate";
import { DUPLICATE, STORED, STORED_OPENED, type LaneAdmission } from "./lane-admission.ts";
import { LaneManifests } from "./lane-manifests.ts";
import type { Clock } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { PinReason } from "../../arena/index.ts";
import { Residency } from "../../arena/index.ts";
import { SegmentState } from "../../arena/index.ts";
import type { SpillEvidence } from "../../arena/index.ts";
import type { SpillSet } from "../../arena/index.ts";
import { decodeSegment } from "../../arena/index.ts";
import type { Counters } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { UnitVerdict } from "../../lanes/index.ts";
import { SendLog } from "../hop/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { CreditGrantor } from "../hop/index.ts";
import type { CreditSender } from "../hop/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { laneArenaIngressLogic } from "../lane-arena/index.ts";
import { laneLogOf } from "../lane-arena/index.ts";
import type {
  LaneArenaEmitted,
  LaneArenaEvent,
  LaneArenaInput,
  LaneArenaView,
  LaneLogView,
} from "../lane-arena/index.ts";
import type { HolderConfig } from "./holder-config.ts";
import type { LoadedUnit } from "./holder-ports.ts";
import { LaneObligations } from "../hop/index.ts";

/** A lane's arena actor, a child of the holder actor. */
export type LaneArenaRef = ActorRefFrom<typeof laneArenaIngressLogic>;

/** Spawns a lane's arena actor as a child of the holder actor, started (holder.machine.ts supplies it). */
export type SpawnLaneArena = (id: string, input: LaneArenaInput) => LaneArenaRef;

/** The lane's arena actor stopped or failed: the lane can no longer store, pin or release. */
export class LaneArenaStoppedError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("lane_arena_stopped", "the lane's arena actor is not running", detail);
  }
}

/** The lane's arena actor refused a request (its `rejected` emission, as an error). */
export class LaneArenaRefusal extends CustodyError {}

/**
 * One lane served by a holder: its own lane-arena actor (one arena per lane, so a lane's memory
 * bound and credits never depend on another lane's traffic) that owns the lane's segments, credits,
 * pins, seal and acceptance log; the lane's obligations, credit grantor for its upstream senders
 * and one credit sender per downstream edge. Segment pins mirror the obligations:
 * `custody_obligation` until a release frontier and every edge's receipt cover the whole segment,
 * `in_flight_forward` (one per edge) until that edge's receipt covers it. Every change to the arena
 * or the log is an event to the actor; its answer comes back as emitted events within that send.
 */
export class HolderLane {
  readonly volume: string;
  readonly lane: string;
  /** The lane's arena actor (a child of the holder actor). */
  readonly arenaActor: LaneArenaRef;
  /** Emitted by the actor during the current request. */
  private readonly replies: LaneArenaEmitted[] = [];
  readonly obligations: LaneObligations;
  readonly grantor: CreditGrantor;
  readonly edges = new Map<string, CreditSender>();
  /** Segment id -> edges still holding an in_flight_forward pin on it. */
  private readonly forwardPins = new Map<number, Set<string>>();
  /** Sequences last receipted at protected-RAM residency (what an evacuation must save). */
  protectedClaimed = RangeSet.EMPTY;
  /** Next receipt sequence of this holder incarnation on this stream. */
  receiptSeq = 1;
  /** Per edge: when each unreceipted range was last sent (gap repair, see edge-repair.ts). */
  readonly sendLogs = new Map<string, SendLog>();
  /** Per edge: re-send backoff factor (see edge-repair.ts). */
  readonly resendBackoff = new Map<string, number>();
  /** Ranges offered to the transfer neighbor and not yet covered by its receipt. */
  inTransfer = RangeSet.EMPTY;
  /** Consistency manifests kept beside this lane's retained range (listed in its receipts). */
  readonly manifests: LaneManifests;
  // a writer's derived lane (configured `representation: coalesced`): receipted as coalesced
  readonly coalesced: boolean;

  constructor(
    cfg: { volume: string; lane: string; upstream: readonly string[]; downstream: readonly string[] },
    holder: HolderConfig,
    transport: Transport,
    clock: Clock,
    counters: Counters,
    spawn: SpawnLaneArena,
  ) {
    this.volume = cfg.volume;
    this.lane = cfg.lane;
    this.manifests = new LaneManifests(cfg.lane);
    this.coalesced = holder.lanes.some(
      (l) => l.volume === cfg.volume && l.lane === cfg.lane && l.representation === "coalesced",
    );
    const seg = holder.arena.segmentBytes;
    // The arena wants whole segments; round the configured limit down to one (at least 4 segments).
    const limit = Math.max(4 * seg, Math.floor(holder.arena.limitBytes / seg) * seg);
    const step = Math.max(seg, Math.floor((holder.arena.incrementBytes ?? limit) / seg) * seg);
    const config = {
      segmentBytes: seg,
      // Capacity is secured in increments (see `grantSpace`), never all up front.
      initialBytes: Math.min(limit, Math.max(4 * seg, step)),
      incrementBytes: step,
      hardLimitBytes: limit,
      maxUnitBytes: holder.arena.maxUnitBytes,
      manifestReserveBytes: seg,
      maxOpenDelayMs: holder.arena.maxOpenDelayMs,
      growthLowWaterBytes: seg,
    };
    const input = {
      config,
      clock,
      counters,
      lanes: [{ volume: cfg.volume, lane: cfg.lane }],
      summaries: false,
      sealTimers: false,
    };
    this.arenaActor = spawn(laneArenaActorId(cfg.volume, cfg.lane), input);
    this.arenaActor.on("*", (e) => this.replies.push(e));
    this.obligations = new LaneObligations(cfg.downstream, holder.epoch);
    this.grantor = new CreditGrantor({
      transport,
      holder: holder.holderId,
      incarnation: holder.incarnation,
      volume: cfg.volume,
      lane: cfg.lane,
      senders: cfg.upstream,
      space: { grant: (n) => this.grantSpace(n) },
      maxOutstanding: holder.arena.maxOutstandingCredit,
    });
  }

  /** The lane's arena, read through the actor's snapshot (changes go through `request`). */
  get arena(): LaneArenaView {
    return this.arenaActor.getSnapshot().context.arena;
  }

  /** The lane's acceptance log, read through the actor's snapshot. */
  get log(): LaneLogView {
    return laneLogOf(this.arenaActor.getSnapshot().context, this.volume, this.lane)!;
  }

  /**
   * Sends `e` to the lane's arena actor and returns what it emitted meanwhile (XState processes a
   * send to an idle actor synchronously and delivers emitted events within it). Throws
   * LaneArenaStoppedError when the actor is no longer running.
   */
  private request(e: LaneArenaEvent): LaneArenaEmitted[] {
    const status = this.arenaActor.getSnapshot().status;
    if (status !== "active")
      throw new LaneArenaStoppedError({ volume: this.volume, lane: this.lane, status, request: e.type });
    this.replies.length = 0;
    this.arenaActor.send(e);
    return this.replies.splice(0);
  }

  /** `request`, expecting the reply `type`; a refusal is thrown as a LaneArenaRefusal with its code. */
  private expect<T extends LaneArenaEmitted["type"]>(
    e: LaneArenaEvent,
    type: T,
  ): Extract<LaneArenaEmitted, { type: T }> | undefined {
    const out = this.request(e);
    const refused = out.find((r) => r.type === "rejected");
    if (refused?.type === "rejected")
      throw new LaneArenaRefusal(refused.code, refused.message, {
        volume: this.volume,
        lane: this.lane,
        request: e.type,
      });
    return out.find((r): r is Extract<LaneArenaEmitted, { type: T }> => r.type === type);
  }

  /**
   * Promises up to `n` bytes of ingress credit. Before unpromised space runs low the next capacity
   * increment is secured (up to the configured limit); past the limit credits are simply withheld.
   */
  grantSpace(n: number): number {
    // Never promise what the protected-RAM bound would not admit (the holder's whole RAM queue).
    const want = Math.min(n, this.creditCap());
    if (want <= 0) return 0;
    return (
      this.expect({ type: "grant", volume: this.volume, lane: this.lane, bytes: want, secure: true }, "granted")
        ?.granted ?? 0
    );
  }

  /** Grants up to `bytes` of credit from the capacity secured now (transfer and restart admissions). */
  reserve(bytes: number): number {
    return this.expect({ type: "grant", volume: this.volume, lane: this.lane, bytes }, "granted")?.granted ?? 0;
  }

  /** Bytes this lane may still promise as credit (the holder sets it; unlimited by default). */
  creditCap: () => number = () => Infinity;

  /** Returns unused credit bytes to the pool (units lost on the wire or refused after crediting). */
  forfeit(bytes: number): void {
    if (bytes <= 0) return;
    const had = this.expect({ type: "revoke", volume: this.volume, lane: this.lane }, "revoked")?.bytes ?? 0;
    const keep = Math.max(0, had - bytes);
    if (keep > 0) this.reserve(keep);
  }

  /**
   * Offers a credited unit to the lane's arena actor, which validates it (size, digest), classifies
   * it against the lane's log (term, overlap, duplicate), appends it and puts one in_flight_forward
   * pin per edge on a segment it opens. A stored unit becomes an obligation here, kept with the
   * writer `attestation` it came with. `opened`: the caller starts that segment's max-open-delay timer.
   */
  admit(u: TransportUnit, attestation?: string): LaneAdmission {
    return this.admitMany([{ unit: u, attestation }])[0]!;
  }

  /**
   * `admit` for a frame's units, in order, as one request to the lane's actor (one event per frame,
   * not per unit: at 4 KiB the per-event cost was a quarter of a hop's CPU). One result per unit.
   */
  admitMany(units: readonly { readonly unit: TransportUnit; readonly attestation?: string }[]): LaneAdmission[] {
    const out: LaneAdmission[] = [];
    const answer = this.request({ type: "admitMany", units, forwardPins: this.edges.size }).find(
      (r) => r.type === "admittedMany",
    );
    for (const r of answer?.type === "admittedMany" ? answer.verdicts : []) {
      if (r.type === "rejected") out.push({ kind: "refused", code: r.code, counted: r.stage === "check" });
      if (r.type !== "admitted") continue;
      if (r.verdict === UnitVerdict.duplicate) {
        out.push(DUPLICATE);
        continue;
      }
      this.obligations.admit(r.firstSeq, r.lastSeq);
      if (r.opened && this.edges.size > 0) this.forwardPins.set(r.segmentId!, new Set(this.edges.keys()));
      out.push(r.opened ? STORED_OPENED : STORED);
    }
    if (out.length !== units.length)
      throw new LaneArenaStoppedError({ volume: this.volume, lane: this.lane, request: "admit" });
    return out;
  }

  /** `admit` for a unit already checked by its caller: a refusal is thrown (LaneArenaRefusal). Returns `opened`. */
  store(u: TransportUnit, attestation?: string): boolean {
    const r = this.admit(u, attestation);
    if (r.kind === "refused")
      throw new LaneArenaRefusal(r.code, "the lane's arena refused a checked unit", {
        volume: this.volume,
        lane: this.lane,
        firstSeq: u.firstSeq,
      });
    return r.kind === "stored" && r.opened;
  }

  /**
   * Takes back a segment found on disk at start, at disk residency (the actor checks it against the
   * lane's log first). Returns its sequences; a refusal is thrown (LaneArenaRefusal).
   */
  adoptSpilled(body: Uint8Array, evidence: SpillEvidence): RangeSet {
    return RangeSet.fromJSON(this.expect({ type: "import", bytes: body, evidence }, "imported")!.seqs);
  }

  /** Seals the open segment (max open delay, or to release/spill/transfer a quiet lane). */
  seal(): void {
    this.request({ type: "seal", volume: this.volume, lane: this.lane });
  }

  private unpin(id: number): void {
    this.expect({ type: "unpin", segmentId: id, reason: PinReason.in_flight_forward }, "recycled");
  }

  /** The actor releases `seqs`: its log forgets them and whole segments they cover lose their custody pin. */
  private release(seqs: RangeSet): void {
    this.expect({ type: "release", volume: this.volume, lane: this.lane, ranges: seqs.toJSON() }, "released");
  }

  /** Sealed segments with their sequences, oldest first. */
  sealedSegments(): { id: number; seqs: RangeSet; residency: string; hasForwardPins: boolean }[] {
    const out = [];
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const s = this.arena.describe(id);
      if (s.state !== SegmentState.sealed) continue;
      out.push({ id, seqs: s.seqs(), residency: s.residency, hasForwardPins: this.forwardPins.has(id) });
    }
    return out;
  }

  /** Drops in_flight_forward pins of sealed segments every edge-specific receipt now covers. */
  unpinForwarded(): void {
    for (const [id, edges] of this.forwardPins) {
      const s = this.arena.describe(id);
      if (s.state !== SegmentState.sealed) continue;
      const seqs = s.seqs();
      for (const e of [...edges]) {
        if (this.obligations.pendingFor(e).intersects(seqs)) continue;
        edges.delete(e);
        if (edges.size === 0) this.forwardPins.delete(id);
        this.unpin(id);
      }
    }
  }

  /**
   * Releases every sealed segment the obligations allow (frontier + every edge's receipt). Returns
   * the released sequences. Whole segments only, decided from metadata: no byte is written.
   */
  releaseAllowed(): RangeSet {
    this.unpinForwarded();
    let released = RangeSet.EMPTY;
    const releasable = this.obligations.releasable();
    if (releasable.isEmpty) return released;
    for (const s of this.sealedSegments()) {
      if (s.seqs.isEmpty || !releasable.coversAll(s.seqs)) continue;
      if (this.obligations.release(s.seqs)) released = released.union(s.seqs);
    }
    if (!released.isEmpty) {
      this.noteDroppedSpill(released);
      this.release(released);
    }
    return released;
  }

  /** Disk records of segments wholly inside `seqs`, about to stop being custody. */
  private noteDroppedSpill(seqs: RangeSet): void {
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const seg = this.arena.describe(id);
      if (!seg.buffer && seg.evidence !== undefined && seqs.coversAll(seg.seqs())) this.droppedSpill.push(seg.evidence);
    }
  }

  private droppedSpill: SpillEvidence[] = [];

  /** Spill records no longer custody since the last call (the holder deletes them from its spill set). */
  takeDroppedSpill(): SpillEvidence[] {
    return this.droppedSpill.splice(0);
  }

  /** Ends local custody of `seqs` after a neighbor's receipt covered them (custody transfer). */
  transferredOut(seqs: RangeSet, neighborRetained: RangeSet): boolean {
    if (!this.obligations.transferOut(seqs, neighborRetained)) return false;
    this.inTransfer = this.inTransfer.subtract(seqs);
    // A transferred segment has no local forward obligation left either.
    for (const s of this.sealedSegments()) {
      if (!seqs.coversAll(s.seqs)) continue;
      const edges = this.forwardPins.get(s.id);
      if (edges) {
        for (let i = 0; i < edges.size; i++) this.unpin(s.id);
        this.forwardPins.delete(s.id);
      }
    }
    this.noteDroppedSpill(seqs);
    this.release(seqs);
    return true;
  }

  /**
   * Retained RAM-resident units that intersect `seqs`, in sequence order (payloads copied), each with the writer
   * attestation stored with it.
   */
  ramUnits(seqs: RangeSet): LoadedUnit[] {
    const out: LoadedUnit[] = [];
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const seg = this.arena.describe(id);
      if (!seg.buffer || !seg.seqs().intersects(seqs)) continue;
      for (const [i, u] of this.arena.units(id).entries()) {
        if (seqs.overlaps(u.firstSeq, u.lastSeq) && this.log.retained.covers(u.firstSeq, u.lastSeq))
          out.push({ unit: copyUnit(u), attestation: seg.attestationAt(i) });
      }
    }
    return out.sort((a, b) => a.unit.firstSeq - b.unit.firstSeq);
  }

  /**
   * Retained units intersecting `seqs` whose segments live on disk, read back (and verified) from
   * the spill stream, each with the writer attestation its spill record stored (if any).
   */
  async diskUnits(spill: SpillSet, seqs: RangeSet): Promise<LoadedUnit[]> {
    const out: LoadedUnit[] = [];
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const seg = this.arena.describe(id);
      const ev = seg.evidence;
      if (seg.buffer || ev === undefined || !seg.seqs().intersects(seqs)) continue;
      const { body } = await spill.read(ev);
      const d = decodeSegment(body);
      for (const [i, u] of d.units.entries()) {
        if (seqs.overlaps(u.firstSeq, u.lastSeq) && this.log.retained.covers(u.firstSeq, u.lastSeq))
          out.push({ unit: copyUnit(u), attestation: d.attestations[i] });
      }
    }
    return out.sort((a, b) => a.unit.firstSeq - b.unit.firstSeq);
  }

  /**
   * Retained units intersecting `seqs`, in sequence order, from RAM and (with `spill`) from disk,
   * reading segment by segment and stopping once `maxUnits` units or about `maxBytes` of payload
   * are gathered — a page costs what it returns, not what the whole range holds. `complete` is
   * true when nothing retained in `seqs` is left after the returned units. `attestations` names,
   * by first sequence, the writer attestation stored with a returned unit (in its RAM segment or
   * its spill record).
   */
  async unitsPage(
    spill: SpillSet | undefined,
    seqs: RangeSet,
    maxUnits: number,
    maxBytes: number,
  ): Promise<{ units: TransportUnit[]; complete: boolean; attestations: Map<number, string> }> {
    const segs = this.arena
      .segmentsOf(this.volume, this.lane)
      .map((id) => ({ id, d: this.arena.describe(id) }))
      .map((x) => ({ ...x, seqs: x.d.seqs() }))
      .filter(
        (x) =>
          x.seqs.intersects(seqs) && (x.d.buffer !== undefined || (spill !== undefined && x.d.evidence !== undefined)),
      )
      // By the lowest sequence each segment holds of those asked for, not its lowest overall: a
      // unit that arrived late lies in a later segment, and reading an earlier one first would
      // fill the page with units above it and leave nothing at or below the cut.
      .sort((a, b) => a.seqs.intersect(seqs).min! - b.seqs.intersect(seqs).min!);
    const out: TransportUnit[] = [];
    const attestations = new Map<number, string>();
    let bytes = 0;
    for (const [i, x] of segs.entries()) {
      let units: readonly TransportUnit[];
      let tokens: readonly (string | undefined)[];
      if (x.d.buffer !== undefined) {
        units = this.arena.units(x.id);
        tokens = units.map((_, j) => x.d.attestationAt(j));
      } else ({ units, attestations: tokens } = decodeSegment((await spill!.read(x.d.evidence!)).body));
      const wanted = (u: TransportUnit) =>
        seqs.overlaps(u.firstSeq, u.lastSeq) && this.log.retained.covers(u.firstSeq, u.lastSeq);
      units.forEach((u, j) => wanted(u) && tokens[j] !== undefined && attestations.set(u.firstSeq, tokens[j]!));
      const mine = units.filter(wanted).map(copyUnit);
      out.push(...mine);
      bytes += mine.reduce((n, u) => n + u.payload.byteLength, 0);
      if ((out.length >= maxUnits || bytes >= maxBytes) && i < segs.length - 1) {
        // Callers page by a cursor (the highest first sequence returned), so a page must hold
        // every wanted unit below its highest one. A segment can mix old and new sequences
        // (re-sent units), so keep only what lies at or below where the unread segments begin.
        let nextMin = Infinity;
        for (const y of segs.slice(i + 1)) nextMin = Math.min(nextMin, y.seqs.intersect(seqs).min ?? Infinity);
        const page = out.filter((u) => u.firstSeq <= nextMin).sort((a, b) => a.firstSeq - b.firstSeq);
        return { units: page, complete: false, attestations };
      }
    }
    out.sort((a, b) => a.firstSeq - b.firstSeq);
    return { units: out, complete: true, attestations };
  }

  /** Newest persistence evidence of this lane (a completed, in-deadline sync). */
  lastDiskEvidence: SpillEvidence | undefined;

  /** Records a completed, in-deadline sync of segment `id`: residency moves to disk, RAM is freed. */
  spilled(id: number, seqs: RangeSet, evidence: SpillEvidence): void {
    if (this.expect({ type: "recordSpill", segmentId: id, evidence }, "spilled") === undefined) return;
    this.obligations.persisted(seqs);
    if (!this.lastDiskEvidence || evidence.offset >= this.lastDiskEvidence.offset) this.lastDiskEvidence = evidence;
  }

  /** RAM-resident stored bytes of this lane (what protected RAM must be able to preserve). */
  ramStoredBytes(): number {
    let n = 0;
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const s = this.arena.describe(id);
      if (s.residency === Residency.ram) n += s.fill;
    }
    return n;
  }

  /** Fraction of the open segment's bytes in use (0 without an open segment). */
  openFill(): number {
    const id = this.arena.openSegmentOf(this.volume, this.lane);
    return id === undefined ? 0 : this.arena.describe(id).fill / this.arena.config.segmentBytes;
  }

  /** Fraction of the arena's capacity held in RAM. */
  fillRatio(): number {
    // Asked for every lane on every pressure check: O(1), not a report over all segments.
    return this.arena.ramBytes / this.arena.capacityBytes;
  }
}

/** A unit whose payload, digest and timestamps no longer share memory with an arena segment. */
function copyUnit(u: TransportUnit): TransportUnit {
  return { ...u, commitTs: [...u.commitTs], payload: new Uint8Array(u.payload), digest: new Uint8Array(u.digest) };
}

/** Id of a lane's arena actor among the holder actor's children. */
export function laneArenaActorId(volume: string, lane: string): string {
  return `lane-arena:${volume}/${lane}`;
}
