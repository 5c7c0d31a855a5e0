import { RangeSet } from "../../lanes/index.ts";
import type { RecoveryParams } from "../../policies/index.ts";
import type { RepairHolding, RepairPort, RepairView, ReplacementTransfer } from "../../actors/repair/repair-port.ts";
import type { RepairSettings } from "../../actors/repair/repair-state.ts";

/** A repair of lane l0 (and l1) of v1: h-dead failed, h-new replaces it. */
export const settings: RepairSettings = {
  repairId: "repair-v1-7",
  volume: "v1",
  lanes: ["l0", "l1"],
  failed: ["h-dead"],
  replacement: { holderId: "h-new", incarnation: 1, publicKey: new Uint8Array([1, 2, 3, 250]), failureDomain: "az2" },
  repairBandwidthBytesPerSec: 1_000,
  receiptTimeoutMs: 50,
};

export const recovery: RecoveryParams = {
  destination: "s-west",
  detectSec: 1,
  authorizeSec: 2,
  acquireCapacitySec: 3,
  persistSec: 4,
  validateSec: 5,
};

export const holding = (holderId: string, lane: string, r: RangeSet, issuedAt = 0, incarnation = 1): RepairHolding => ({
  holderId,
  incarnation,
  lane,
  retained: r,
  issuedAt,
});

/** A view where h-dead retained 1..40 of l0 (10..20 of it released), h-a and h-b survive. */
export function viewOf(holdings: RepairHolding[] = baseHoldings()): RepairView {
  return {
    holders: {
      "h-dead": { status: "failed", incarnation: 1 },
      "h-a": { status: "active", incarnation: 1 },
      "h-b": { status: "active", incarnation: 2 },
      "h-c": { status: "retired", incarnation: 1 },
      "h-new": { status: "active", incarnation: 1 },
    },
    lanes: {
      l0: { released: { "h-dead": RangeSet.of(10, 20) }, responsible: {} },
      l1: { released: {}, responsible: {} },
    },
    holdings,
    staleAfterMs: 1_000,
    recovery,
  };
}

export function baseHoldings(): RepairHolding[] {
  return [
    holding("h-dead", "l0", RangeSet.of(1, 40)),
    holding("h-a", "l0", RangeSet.of(1, 30)),
    holding("h-b", "l0", RangeSet.of(1, 40), 0, 2),
  ];
}

/** Freezes `v` and everything it holds (typed arrays aside), to prove a function does not mutate it. */
export function deepFreeze<T>(v: T): T {
  if (v === null || typeof v !== "object" || ArrayBuffer.isView(v) || Object.isFrozen(v)) return v;
  for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  return Object.freeze(v);
}

/** An in-memory RepairPort that records what it was asked; `holdings` may change between views. */
export class FakeRepairPort implements RepairPort {
  readonly pollMs = 10;
  holdings: RepairHolding[] = baseHoldings();
  views = 0;
  readonly protected: { id: string; lane: string; ranges: [number, number][] }[] = [];
  readonly unprotected: string[] = [];
  readonly admitted: string[] = [];
  readonly transfers: ReplacementTransfer[] = [];
  admitError: Error | undefined;
  private seq = 100;

  view(): Promise<RepairView> {
    this.views++;
    return Promise.resolve(viewOf(this.holdings));
  }
  admit(r: { holderId: string; publicKey: Uint8Array }): Promise<number> {
    if (this.admitError !== undefined) return Promise.reject(this.admitError);
    this.admitted.push(`${r.holderId}:${[...r.publicKey].join(",")}`);
    return Promise.resolve(++this.seq);
  }
  activate(t: ReplacementTransfer): Promise<number> {
    this.transfers.push(t);
    return Promise.resolve(++this.seq);
  }
  protect(r: { id: string; lane: string; ranges: RangeSet }): Promise<void> {
    this.protected.push({ id: r.id, lane: r.lane, ranges: r.ranges.toJSON() });
    return Promise.resolve();
  }
  unprotect(id: string): Promise<void> {
    this.unprotected.push(id);
    return Promise.resolve();
  }
}
