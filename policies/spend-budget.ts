import { z } from "zod";
import {
  applySpendCeiling,
  BudgetKind,
  planBudgets,
  streamCost,
  transferCost,
  type BudgetPlan,
  type LegCost,
  type PricedEdge,
} from "./cost.ts";
import { PolicyInputError } from "./policy-errors.ts";
import { parseWith } from "./state-schema.ts";

/**
 * Spend rules a controller enforces on the transfers it starts itself (coverage copies, repairs):
 * a monthly ceiling and separate steady / catch-up / repair / long-outage budgets planned by
 * `planBudgets`. Required work is never refused (a ceiling must not weaken a required scenario);
 * optional work — work that only serves scenarios the contract does not require — is refused while
 * it would break the ceiling or its budget, and the refusal is reported. Pure.
 */

const nonNeg = z.number().finite().nonnegative();
const name = z.string().min(1).max(128);
const pricedEdgeSchema = z.strictObject({
  from: name.describe("region id"),
  to: name.describe("region id"),
  charges: z.array(z.strictObject({ name, usdPerGB: nonNeg })).max(16),
});

/** zod schema of a controller's `spend` section. Unknown keys are errors. */
export const spendConfigSchema = z.strictObject({
  /** Dollars the volume's transfers may cost per period (30 days). */
  monthlyCeilingUsd: nonNeg,
  /**
   * Priced region-to-region edges. The steady stream's path is `steadyPath` (edges in order); a
   * copy between two regions is charged the edge between them (either direction). A copy between
   * regions with no priced edge has an unknown price: optional copies there are refused.
   */
  edges: z.array(pricedEdgeSchema).max(256).default([]),
  /** Indexes into `edges`: the path every acknowledged byte takes steadily. */
  steadyPath: z.array(z.number().int().nonnegative()).max(16).default([]),
  /** Inputs of the budget plan (see `planBudgets`); bytes and bytes per second. */
  plan: z
    .strictObject({
      bytesPerSec: nonNeg,
      catchUpBytes: nonNeg,
      repairBytesPerFailure: nonNeg,
      declaredFailuresPerPeriod: nonNeg,
      longOutageSec: nonNeg,
    })
    .default({
      bytesPerSec: 0,
      catchUpBytes: 0,
      repairBytesPerFailure: 0,
      declaredFailuresPerPeriod: 0,
      longOutageSec: 0,
    }),
});
export type SpendConfig = z.infer<typeof spendConfigSchema>;
export type SpendConfigInput = z.input<typeof spendConfigSchema>;

/** Parses a `spend` section; throws PolicyInputError naming the first bad path. */
export function parseSpendConfig(raw: unknown): SpendConfig {
  const c = parseWith(spendConfigSchema, raw);
  c.steadyPath.forEach((i, n) => {
    if (c.edges[i] === undefined)
      throw new PolicyInputError(`steadyPath[${n}]`, `no edge ${i} (there are ${c.edges.length})`);
  });
  return c;
}

/** Why optional work was refused. */
export const SpendRefusal = {
  ceiling: "spend_ceiling",
  budget: "budget_exhausted",
  unpriced: "unpriced_path",
} as const;
export type SpendRefusal = (typeof SpendRefusal)[keyof typeof SpendRefusal];

/** One transfer the controller wants to start. */
export interface WorkRequest {
  readonly id: string;
  readonly kind: BudgetKind;
  /** True when it serves a required scenario: never refused. */
  readonly required: boolean;
  readonly bytes: number;
  readonly fromRegions: readonly string[];
  readonly toRegion: string;
}

/** What the guard decided for one request, with its price. */
export type WorkDecision =
  | { readonly allowed: true; readonly usd: number }
  | { readonly allowed: false; readonly usd: number | null; readonly reason: SpendRefusal };

/** What the status document reports about spend in the current period. */
export interface SpendReport {
  readonly ceilingUsd: number;
  readonly periodStartMs: number;
  /** Planned (budgets) plus spent above plan: what this period is on course to cost. */
  readonly projectedUsd: number;
  readonly overCeiling: boolean;
  readonly budgets: {
    readonly kind: BudgetKind;
    readonly budgetBytes: number;
    readonly spentBytes: number;
    readonly budgetUsd: number;
    readonly spentUsd: number;
  }[];
  readonly steadyLegs: LegCost[];
  readonly refusedOptional: number;
}

/** The spend period: budgets and the ceiling are per 30 days. */
export const PERIOD_MS = 30 * 86_400_000;

const emptySpend = (): Record<BudgetKind, { bytes: number; usd: number }> => ({
  steady: { bytes: 0, usd: 0 },
  catch_up: { bytes: 0, usd: 0 },
  repair: { bytes: 0, usd: 0 },
  long_outage: { bytes: 0, usd: 0 },
});

/**
 * Spend of the current period, by budget kind, and the decisions on new work. Spend is counted
 * when work is admitted (its planned bytes at the path's price), so a copy that fails still counts.
 */
export class SpendGuard {
  readonly plan: BudgetPlan;
  readonly steadyLegs: LegCost[];
  private spent = emptySpend();
  private refused = 0;

  constructor(
    readonly config: SpendConfig,
    private periodStartMs: number,
  ) {
    const steady = streamCost(
      config.steadyPath.map((i): PricedEdge => config.edges[i]!),
      config.plan.bytesPerSec,
    );
    this.steadyLegs = steady.legs;
    // Steady bytes take the steady path; catch-up, repair and outage transfers may take any
    // priced edge, so their budgets are priced at the dearest one (an upper bound).
    const steadyPlan = planBudgets({ ...config.plan, usdPerGBPath: steady.legs.reduce((a, l) => a + l.usdPerGB, 0) });
    const dearest = Math.max(0, ...config.edges.map((e) => e.charges.reduce((a, c) => a + c.usdPerGB, 0)));
    const otherPlan = planBudgets({ ...config.plan, usdPerGBPath: dearest });
    const budgets = { ...otherPlan.budgets, steady: steadyPlan.budgets.steady };
    this.plan = {
      budgets,
      longOutageBacklogBytes: otherPlan.longOutageBacklogBytes,
      totalUsd: Object.values(budgets).reduce((a, b) => a + b.usd, 0),
    };
  }

  /** Starts a new period when the current one is over (spend resets; budgets are per period). */
  private roll(nowMs: number): void {
    if (nowMs - this.periodStartMs < PERIOD_MS) return;
    this.periodStartMs += Math.floor((nowMs - this.periodStartMs) / PERIOD_MS) * PERIOD_MS;
    this.spent = emptySpend();
  }

  /** Dollars per GB between two regions (0 inside a region), or undefined when no edge prices it. */
  usdPerGB(from: string, to: string): number | undefined {
    if (from === to) return 0;
    const e = this.config.edges.find((x) => (x.from === from && x.to === to) || (x.from === to && x.to === from));
    return e === undefined ? undefined : e.charges.reduce((a, c) => a + c.usdPerGB, 0);
  }

  /**
   * Decides one request and, when allowed, charges it to its budget. A copy read from several
   * regions is priced at the dearest of them. Required work is always allowed (and charged, even
   * past the ceiling: the report then says the period is over). Optional work is refused when its
   * price is unknown, when its budget would be exceeded, or when `applySpendCeiling` stops it.
   */
  decide(w: WorkRequest, nowMs: number): WorkDecision {
    this.roll(nowMs);
    const prices = w.fromRegions.map((r) => this.usdPerGB(r, w.toRegion));
    const unknown = prices.some((p) => p === undefined);
    const usd = unknown ? null : transferCost(w.bytes, Math.max(0, ...(prices as number[])));
    const charge = (): WorkDecision => {
      this.spent[w.kind] = { bytes: this.spent[w.kind].bytes + w.bytes, usd: this.spent[w.kind].usd + (usd ?? 0) };
      return { allowed: true, usd: usd ?? 0 };
    };
    if (w.required) return charge();
    const refuse = (reason: SpendRefusal): WorkDecision => {
      this.refused++;
      return { allowed: false, usd, reason };
    };
    if (usd === null) return refuse(SpendRefusal.unpriced);
    // Budgets are in bytes (what the plan sized); the ceiling is in dollars.
    if (this.spent[w.kind].bytes + w.bytes > this.plan.budgets[w.kind].bytes) return refuse(SpendRefusal.budget);
    // The period's committed cost (the plan, or more where spend already ran past it) is required;
    // the new work is the one optional copy the ceiling may stop.
    const committed = this.projectedUsd();
    const { outcomes } = applySpendCeiling(
      [
        { id: "committed", required: true, monthlyUsd: committed, bytesPerSec: 0 },
        { id: w.id, required: false, monthlyUsd: usd, bytesPerSec: 0 },
      ],
      this.config.monthlyCeilingUsd,
    );
    if (outcomes[1]!.action === "stop") return refuse(SpendRefusal.ceiling);
    return charge();
  }

  /** Each budget, or what was spent under it when more: the period's projected cost. */
  private projectedUsd(): number {
    return Object.values(BudgetKind).reduce((a, k) => a + Math.max(this.plan.budgets[k].usd, this.spent[k].usd), 0);
  }

  /** The period's figures for the status document. */
  report(nowMs: number): SpendReport {
    this.roll(nowMs);
    const projectedUsd = this.projectedUsd();
    return {
      ceilingUsd: this.config.monthlyCeilingUsd,
      periodStartMs: this.periodStartMs,
      projectedUsd,
      overCeiling: projectedUsd > this.config.monthlyCeilingUsd,
      budgets: Object.values(BudgetKind).map((kind) => ({
        kind,
        budgetBytes: this.plan.budgets[kind].bytes,
        spentBytes: this.spent[kind].bytes,
        budgetUsd: this.plan.budgets[kind].usd,
        spentUsd: this.spent[kind].usd,
      })),
      steadyLegs: this.steadyLegs,
      refusedOptional: this.refused,
    };
  }
}
