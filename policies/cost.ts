import { PolicyInputError } from "./policy-errors.ts";
import { Bytes } from "./sizing.ts";

/** One charged component of a path (e.g. inter-region transfer, transit-gateway processing). */
export interface Charge {
  readonly name: string;
  readonly usdPerGB: number;
}

/** A directed edge of a custody graph with every charge levied on bytes crossing it. */
export interface PricedEdge {
  readonly from: string;
  readonly to: string;
  readonly charges: readonly Charge[];
}

/** Cost of one charged leg. */
export interface LegCost {
  readonly from: string;
  readonly to: string;
  readonly charge: string;
  readonly usdPerGB: number;
  readonly usd: number;
}

const SEC_PER_DAY = 86_400;

/** Dollars for `bytes` at `usdPerGB` per billable decimal GB. */
export function transferCost(bytes: number, usdPerGB: number): number {
  return (bytes / Bytes.GB) * usdPerGB;
}

/** Dollars for one leg carrying `bytesPerSec` for `days` (default 30) at `usdPerGB`. */
export function legMonthlyCost(bytesPerSec: number, usdPerGB: number, days = 30): number {
  return transferCost(bytesPerSec * SEC_PER_DAY * days, usdPerGB);
}

/**
 * Per-leg costs of a stream of `bytesPerSec` over `edges` for `days`: each charge on each edge is
 * its own leg (so a transfer plus a processing fee is two legs). Returns legs and the total.
 */
export function streamCost(
  edges: readonly PricedEdge[],
  bytesPerSec: number,
  days = 30,
): { legs: LegCost[]; totalUsd: number } {
  if (!(bytesPerSec >= 0)) throw new PolicyInputError("bytesPerSec", "must be >= 0");
  const legs: LegCost[] = [];
  edges.forEach((e, i) =>
    e.charges.forEach((c, j) => {
      if (!(c.usdPerGB >= 0)) throw new PolicyInputError(`edges[${i}].charges[${j}].usdPerGB`, "must be >= 0");
      legs.push({
        from: e.from,
        to: e.to,
        charge: c.name,
        usdPerGB: c.usdPerGB,
        usd: legMonthlyCost(bytesPerSec, c.usdPerGB, days),
      });
    }),
  );
  return { legs, totalUsd: legs.reduce((a, l) => a + l.usd, 0) };
}

/** The four separately budgeted kinds of transfer. */
export const BudgetKind = {
  steady: "steady",
  catchUp: "catch_up",
  repair: "repair",
  longOutage: "long_outage",
} as const;
export type BudgetKind = (typeof BudgetKind)[keyof typeof BudgetKind];

/** Inputs of a budget plan for one stream over one priced path. */
export interface BudgetInput {
  readonly bytesPerSec: number;
  readonly usdPerGBPath: number;
  readonly days?: number | undefined;
  /** Backlog re-sent after an ordinary forwarding hiccup. */
  readonly catchUpBytes: number;
  /** Bytes re-copied to restore coverage after each declared failure, and how many per period. */
  readonly repairBytesPerFailure: number;
  readonly declaredFailuresPerPeriod: number;
  /** The longest outage the contract rides through: its backlog must be held AND later shipped. */
  readonly longOutageSec: number;
}

/** Separate budgets, bytes and dollars each; a long outage also states the memory it pins. */
export interface BudgetPlan {
  readonly budgets: Record<BudgetKind, { bytes: number; usd: number }>;
  readonly longOutageBacklogBytes: number;
  readonly totalUsd: number;
}

/** Budgets steady replication, catch-up, repair and long outages separately (never pooled). */
export function planBudgets(input: BudgetInput): BudgetPlan {
  const days = input.days ?? 30;
  const steadyBytes = input.bytesPerSec * SEC_PER_DAY * days;
  const repairBytes = input.repairBytesPerFailure * input.declaredFailuresPerPeriod;
  const backlog = input.bytesPerSec * input.longOutageSec;
  const mk = (bytes: number) => ({ bytes, usd: transferCost(bytes, input.usdPerGBPath) });
  const budgets = {
    steady: mk(steadyBytes),
    catch_up: mk(input.catchUpBytes),
    repair: mk(repairBytes),
    long_outage: mk(backlog),
  };
  return { budgets, longOutageBacklogBytes: backlog, totalUsd: Object.values(budgets).reduce((a, b) => a + b.usd, 0) };
}

/** A copy of a stream with its monthly cost; required copies may name qualified alternative paths. */
export interface CopyPlan {
  readonly id: string;
  readonly required: boolean;
  readonly monthlyUsd: number;
  readonly bytesPerSec: number;
  readonly alternatives?:
    readonly { readonly id: string; readonly monthlyUsd: number; readonly qualified: boolean }[] | undefined;
}

/** What happens to one copy under a spend ceiling. */
export interface CopyOutcome {
  readonly id: string;
  readonly required: boolean;
  readonly action: "keep" | "stop" | "alternate_path" | "backpressure";
  readonly via?: string | undefined;
  readonly monthlyUsd: number;
  /** For a stopped optional copy: its lag grows by this many bytes every second (reported, not hidden). */
  readonly lagGrowthBytesPerSec: number;
}

/**
 * Applies a monthly spend ceiling. Only optional copies are stopped (most expensive first, ties
 * by id) and their growing lag is reported. Required copies are never stopped: if they alone
 * exceed the ceiling, each switches to its cheapest cheaper qualified alternative, and any still
 * over gets `backpressure` (the writer must slow rather than acknowledge uncovered work).
 */
export function applySpendCeiling(
  copies: readonly CopyPlan[],
  ceilingUsd: number,
): { outcomes: CopyOutcome[]; totalUsd: number; overCeiling: boolean } {
  const out = new Map<string, CopyOutcome>();
  let total = 0;
  const required = copies.filter((c) => c.required);
  const optional = copies
    .filter((c) => !c.required)
    .sort((a, b) => b.monthlyUsd - a.monthlyUsd || (a.id < b.id ? -1 : 1));
  for (const c of required) {
    out.set(c.id, { id: c.id, required: true, action: "keep", monthlyUsd: c.monthlyUsd, lagGrowthBytesPerSec: 0 });
    total += c.monthlyUsd;
  }
  if (total > ceilingUsd) {
    for (const c of [...required].sort((a, b) => b.monthlyUsd - a.monthlyUsd || (a.id < b.id ? -1 : 1))) {
      if (total <= ceilingUsd) break;
      const alt = (c.alternatives ?? [])
        .filter((a) => a.qualified && a.monthlyUsd < c.monthlyUsd)
        .sort((a, b) => a.monthlyUsd - b.monthlyUsd || (a.id < b.id ? -1 : 1))[0];
      if (alt) {
        total += alt.monthlyUsd - c.monthlyUsd;
        out.set(c.id, {
          id: c.id,
          required: true,
          action: "alternate_path",
          via: alt.id,
          monthlyUsd: alt.monthlyUsd,
          lagGrowthBytesPerSec: 0,
        });
      }
    }
    if (total > ceilingUsd)
      for (const c of required)
        if (out.get(c.id)!.action === "keep") out.set(c.id, { ...out.get(c.id)!, action: "backpressure" });
  }
  let optionalTotal = optional.reduce((a, c) => a + c.monthlyUsd, 0);
  for (const c of optional) {
    if (total + optionalTotal > ceilingUsd) {
      optionalTotal -= c.monthlyUsd;
      out.set(c.id, { id: c.id, required: false, action: "stop", monthlyUsd: 0, lagGrowthBytesPerSec: c.bytesPerSec });
    } else
      out.set(c.id, { id: c.id, required: false, action: "keep", monthlyUsd: c.monthlyUsd, lagGrowthBytesPerSec: 0 });
  }
  total += optionalTotal;
  return { outcomes: copies.map((c) => out.get(c.id)!), totalUsd: total, overCeiling: total > ceilingUsd };
}
