import type { Random } from "../core/index.ts";
import { Counters } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import {
  authorizeReleases,
  requiredReports,
  type EvaluationState,
  type Holder,
  type ReleaseDecision,
  type ReleaseRequest,
  type RetainedClaim,
} from "../policies/index.ts";
import type { EventTrace } from "./event-trace.ts";
import { modelSubject } from "./model-holder.ts";
import type { SimEndpoint, SimNetwork } from "./sim-network.ts";
import type { SimulatedClock } from "./simulated-clock.ts";
import type { WorldSpec } from "./world.ts";

/** The release decision function: `authorizeReleases` from policies/, or a test's replacement. */
export type ReleaseAuthorizer = (state: EvaluationState, requests: readonly ReleaseRequest[]) => ReleaseDecision[];

/** A holder's latest receipt as the controller keeps it (minus ranges it already granted for release). */
interface LedgerEntry {
  inc: number;
  at: number;
  ram: RangeSet;
  disk: RangeSet;
  protectedRamValid: boolean;
  forwarded: RangeSet;
  /** Cached ram ∪ disk (cleared when either changes). */
  all?: RangeSet | undefined;
}

/** What the controller tells the observer after each evaluation. */
export interface ControllerObserver {
  /** Required-scenario cuts the controller reported (confirmed) at this evaluation, before releasing. */
  confirmed(cuts: ReadonlyMap<string, number>): void;
  /** Releases granted in this evaluation (holder → ranges). */
  granted(grants: ReadonlyMap<string, RangeSet>): void;
}

/**
 * A model of the regional controller: a receipt ledger (durable, like the control log), periodic
 * scenario evaluation with the real policy engine, and release grants decided jointly by the
 * release authorizer. Two views of the ledger:
 * - the REPORT view (what it confirms): only holders heard from within `suspectMs`, evidence
 *   staleness applies — it never over-reports;
 * - the RELEASE view: every entry, evidence never stale — entries only shrink by grants, so a
 *   release can never rely on a lowered view (partition, slow receipts) to drop a confirmed cut.
 * Receipts from an older incarnation or older than the entry are rejected and counted.
 */
export class ModelController {
  readonly counters = new Counters();
  up = false;
  readonly #ledger = new Map<string, LedgerEntry>();
  readonly #granted = new Map<string, RangeSet>();
  #lastHeard = new Map<string, number>();
  #acked = -1;
  #retired = new Set<string>();
  #endpoint: SimEndpoint | undefined;
  #life = 0;

  constructor(
    private readonly spec: WorldSpec,
    private readonly clock: SimulatedClock,
    private readonly net: SimNetwork,
    private readonly trace: EventTrace,
    private readonly random: Random,
    private readonly authorize: ReleaseAuthorizer,
    private readonly observer: ControllerObserver,
  ) {}

  /** Ranges granted for release so far, per holder (durable). */
  grantedTo(holder: string): RangeSet {
    return this.#granted.get(holder) ?? RangeSet.EMPTY;
  }

  /** Ledger claims of `holder` (ram ∪ disk), for the invariant checks. */
  ledgerClaims(holder: string): RangeSet {
    const e = this.#ledger.get(holder);
    if (e === undefined) return RangeSet.EMPTY;
    e.all ??= e.ram.union(e.disk);
    return e.all;
  }

  /** Starts (or restarts after a loss): the durable ledger and grants are kept, liveness is relearned. */
  start(): void {
    this.up = true;
    const life = ++this.#life;
    this.#lastHeard = new Map();
    const ep = this.net.endpoint("controller", this.spec.vault.site);
    this.#endpoint = ep;
    ep.subscribe(modelSubject.receipt(), (m) =>
      this.#onReceipt(JSON.parse(new TextDecoder().decode(m.data)) as Record<string, unknown>),
    );
    this.trace.record({ atMs: this.clock.now(), kind: "start", actor: "ctrl" });
    const tick = () => {
      if (this.#life !== life || !this.up) return;
      this.#evaluate();
      this.clock.schedule(tick, this.spec.timing.evalMs, "eval");
    };
    this.clock.schedule(tick, this.spec.timing.evalMs, "eval");
  }

  /** The controller process is lost for `durationMs` (its volatile state goes with it). */
  lose(durationMs: number): void {
    if (!this.up) return;
    this.up = false;
    this.#life++;
    this.net.crash("controller");
    this.trace.record({ atMs: this.clock.now(), kind: "controller_lost", actor: "ctrl", detail: { durationMs } });
    const life = this.#life;
    this.clock.schedule(
      () => {
        if (this.#life === life) this.start();
      },
      durationMs,
      "ctrl-restart",
    );
  }

  /** A declared failure: the holder was destroyed; its entry leaves the ledger for good. */
  declareLost(holder: string): void {
    this.#retired.add(holder);
    this.#ledger.delete(holder);
    this.trace.record({ atMs: this.clock.now(), kind: "declared_lost", actor: "ctrl", detail: { holder } });
  }

  #onReceipt(m: Record<string, unknown>): void {
    const holder = String(m.holder);
    if (this.#retired.has(holder)) return;
    if (holder !== this.spec.writer.id && !this.spec.holders.some((h) => h.id === holder)) {
      this.counters.inc("unknown_holder"); // never enters the ledger (the policy engine would reject it)
      return;
    }
    const inc = Number(m.inc);
    const at = Number(m.at);
    const cur = this.#ledger.get(holder);
    if (cur !== undefined && (inc < cur.inc || (inc === cur.inc && at <= cur.at))) {
      this.counters.inc("stale_receipt");
      return;
    }
    const g = this.grantedTo(holder);
    const r = (v: unknown) => RangeSet.fromJSON(v as [number, number][]).subtract(g); // granted ranges never reappear
    this.#ledger.set(holder, {
      inc,
      at,
      ram: r(m.ram),
      disk: r(m.disk),
      protectedRamValid: m.protectedRamValid === true,
      forwarded: r(m.forwarded),
    });
    this.#lastHeard.set(holder, this.clock.now());
    if (holder === "writer") this.#acked = Math.max(this.#acked, Number(m.acked));
  }

  #state(view: "report" | "release"): EvaluationState {
    const now = this.clock.now();
    const { spec } = this;
    const lane = spec.lane;
    const holderSpecs = [{ id: spec.writer.id, site: spec.writer.site, protectedRam: false }, ...spec.holders];
    const holders: Holder[] = holderSpecs.map((h) => {
      const e = this.#ledger.get(h.id);
      const fresh =
        view === "release" || (this.#lastHeard.has(h.id) && now - this.#lastHeard.get(h.id)! <= spec.timing.suspectMs);
      const claims: RetainedClaim[] = [];
      if (e !== undefined && fresh) {
        const evidence = { kind: "observed" as const, atMs: e.at };
        if (!e.ram.isEmpty) {
          claims.push({
            lane,
            ranges: e.ram,
            residency: h.protectedRam ? "protected_ram" : "ram",
            evidence,
            protectedRamValid: e.protectedRamValid,
          });
        }
        if (!e.disk.isEmpty) claims.push({ lane, ranges: e.disk, residency: "disk", evidence });
      }
      return { id: h.id, site: h.site, claims };
    });
    holders.push({ id: spec.vault.holder, site: spec.vault.site, claims: [] });
    return {
      volume: spec.volume,
      asOfMs: now,
      staleAfterMs: view === "release" ? Number.MAX_SAFE_INTEGER : 2 * spec.timing.suspectMs,
      source: { site: spec.writer.site, lanes: { [lane]: this.#acked } },
      commits: [],
      sites: spec.sites,
      holders,
      bases: [{ id: "base0", holder: spec.vault.holder, cut: { [lane]: -1 }, bytes: 0 }],
      manifests: [],
      keyAuthorities: [{ id: "ka", site: spec.vault.site }],
      links: [],
      recovery: {
        destination: spec.vault.site,
        detectSec: 1,
        authorizeSec: 1,
        acquireCapacitySec: 1,
        persistSec: 1,
        validateSec: 1,
      },
      forwards: [],
      pins: [],
      recoveries: [],
      scenarios: spec.scenarios,
      timelines: [],
    };
  }

  #evaluate(): void {
    const report = this.#state("report");
    const cuts = new Map<string, number>();
    for (const r of requiredReports(report)) cuts.set(r.name, r.cut?.[this.spec.lane] ?? -1);
    this.observer.confirmed(cuts);

    // Each holder wants to drop what it has forwarded, except its newest `keepUnits`.
    const keep = new Map<string, number>([
      [this.spec.writer.id, this.spec.writer.keepUnits],
      ...this.spec.holders.map((h) => [h.id, h.keepUnits] as const),
    ]);
    const requests: ReleaseRequest[] = [];
    for (const [id, e] of this.#ledger) {
      const all = e.ram.union(e.disk);
      const max = all.max;
      if (max === undefined) continue;
      const limit = max - keep.get(id)!;
      if (limit < 0) continue;
      const want = all.intersect(e.forwarded).intersect(RangeSet.of(0, limit));
      if (!want.isEmpty) requests.push({ holder: id, lane: this.spec.lane, ranges: want });
    }
    if (requests.length === 0) return;
    const decisions = this.authorize(this.#state("release"), this.random.shuffle(requests));
    const grants = new Map<string, RangeSet>();
    for (const d of decisions) {
      if (!d.allowed) continue;
      const h = d.request.holder;
      grants.set(h, (grants.get(h) ?? RangeSet.EMPTY).union(d.request.ranges));
    }
    for (const [h, ranges] of grants) {
      this.#granted.set(h, this.grantedTo(h).union(ranges));
      const e = this.#ledger.get(h)!;
      e.ram = e.ram.subtract(ranges);
      e.disk = e.disk.subtract(ranges);
      e.forwarded = e.forwarded.subtract(ranges);
      e.all = undefined;
      this.trace.record({
        atMs: this.clock.now(),
        kind: "grant_release",
        actor: "ctrl",
        detail: { holder: h, ranges: ranges.toJSON() },
      });
      this.#endpoint!.publish(
        modelSubject.release(h),
        new TextEncoder().encode(JSON.stringify({ ranges: ranges.toJSON() })),
      );
    }
    if (grants.size > 0) this.observer.granted(grants);
  }
}
