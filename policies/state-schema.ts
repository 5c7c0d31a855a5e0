import { z } from "zod";
import { RangeSet } from "../lanes/index.ts";
import { reportedIssue, type Counters } from "../core/index.ts";
import type { EvaluationState } from "./evaluation-state.ts";
import { PolicyInputError } from "./policy-errors.ts";
import { validateEvaluationState } from "./state-validation.ts";

const id = z
  .string()
  .min(1)
  .regex(/^[A-Za-z0-9_\-:.]+$/, "ids use letters, digits, _ - : .");
const seq = z.number().int().nonnegative();
const nonNeg = z.number().nonnegative();
const ranges = z
  .array(z.tuple([seq, seq]).refine(([a, b]) => a <= b, "range must be [first, last] with first <= last"))
  .describe("inclusive sequence ranges [[first, last], ...]");
const cut = z.record(z.string(), seq).describe("lane -> last sequence included");

/** zod schema of a site (failure-domain position plus dependency tags). */
export const siteSchema = z.strictObject({
  id,
  region: id,
  az: id,
  host: id,
  placementGroup: id.optional(),
  deps: z.array(z.string()).default([]),
});

/** zod schema of one loss: a domain token and a loss kind. */
export const lossSchema = z.strictObject({
  domain: z.string().min(3),
  kind: z.enum(["partition", "crash", "power_loss", "site_destruction"]),
});

/** zod schema of the loss a scenario allows (absent: none). */
export const allowedLossSchema = z.strictObject({
  seqs: z.number().int().nonnegative().optional(),
  bytes: nonNeg.optional(),
  ageSec: nonNeg.optional(),
});

/** zod schema of a named simultaneous-loss scenario. */
export const scenarioSchema = z.strictObject({
  name: z.string().min(1),
  losses: z.array(lossSchema).min(1),
  deadlineSec: nonNeg,
  required: z.boolean().default(true),
  destination: id.optional(),
  allowedLoss: allowedLossSchema.optional(),
});

/** zod schema of a timeline of sequential losses. */
export const timelineSchema = z.strictObject({
  name: z.string().min(1),
  minIntervalSec: nonNeg,
  events: z.array(z.strictObject({ afterSec: nonNeg, losses: z.array(lossSchema).min(1) })).min(1),
  deadlineSec: nonNeg,
  required: z.boolean().default(true),
  destination: id.optional(),
  allowedLoss: allowedLossSchema.optional(),
  /** Repair before the next allowed failure: re-make lost copies at `site` within `minIntervalSec`. */
  repair: z.strictObject({ site: id }).optional(),
});

const claimSchema = z.strictObject({
  lane: id,
  ranges,
  residency: z.enum(["ram", "protected_ram", "disk"]),
  evidence: z.strictObject({ kind: z.enum(["observed", "admitted_bound"]), atMs: nonNeg }),
  protectedRamValid: z.boolean().optional(),
  retainUntilMs: nonNeg.optional(),
});

/** A control-log replica or controller: its region, or the site it runs at. */
const controlMemberSchema = z.strictObject({ id, region: id, site: id.optional() });

const manifestSchema = z.strictObject({
  id,
  cut,
  holders: z.array(id).min(1),
  residency: z.enum(["ram", "disk"]).optional(),
});

/** zod schema of the JSON form of an EvaluationState (ranges as [[first, last], ...]). */
export const evaluationStateSchema = z.strictObject({
  volume: id,
  asOfMs: nonNeg,
  staleAfterMs: nonNeg,
  source: z.strictObject({ site: id, lanes: cut }),
  commits: z
    .array(z.strictObject({ lane: id, first: seq, last: seq, committedAtMs: nonNeg, bytesPerSeq: nonNeg }))
    .default([]),
  sites: z.array(siteSchema).min(1),
  holders: z.array(
    z.strictObject({
      id,
      site: id,
      claims: z.array(claimSchema).default([]),
      coalesced: z.array(claimSchema).optional(),
      audit: z.enum(["pending", "passed", "failed"]).optional(),
    }),
  ),
  bases: z.array(z.strictObject({ id, holder: id, cut, bytes: nonNeg })).default([]),
  manifests: z.array(manifestSchema).default([]),
  coalescedManifests: z.array(manifestSchema).optional(),
  keyAuthorities: z.array(z.strictObject({ id, site: id })).default([]),
  metadataQuorum: z.strictObject({ members: z.array(id).min(1), quorum: z.number().int().positive() }).optional(),
  links: z
    .array(
      z.strictObject({
        id,
        from: id,
        to: id,
        bandwidthBytesPerSec: z.number().positive(),
        deps: z.array(z.string()).default([]),
        measuredAgeMs: nonNeg.optional(),
      }),
    )
    .default([]),
  recovery: z.strictObject({
    destination: id,
    detectSec: nonNeg,
    authorizeSec: nonNeg,
    acquireCapacitySec: nonNeg,
    persistSec: nonNeg,
    validateSec: nonNeg,
  }),
  forwards: z
    .array(
      z.strictObject({
        from: id,
        to: id,
        lane: id,
        ranges,
        residency: z.enum(["ram", "protected_ram", "disk"]),
        completesAfterSec: nonNeg,
      }),
    )
    .default([]),
  pins: z.array(z.strictObject({ id, holder: id, lane: id, ranges })).default([]),
  recoveries: z.array(z.strictObject({ id, lane: id, ranges, sources: z.array(id).optional() })).default([]),
  scenarios: z.array(scenarioSchema).default([]),
  timelines: z.array(timelineSchema).default([]),
  /** Steady write load measured on links, by sending site (repair shares the link with it). */
  linkLoads: z.array(z.strictObject({ link: id, fromSite: id, bytesPerSec: nonNeg })).optional(),
  /** Where the control plane runs (issue #45), version 1; absent: not evaluated (older files). */
  controlPlane: z
    .strictObject({
      version: z.literal(1),
      log: id,
      logReplicas: z.array(controlMemberSchema).min(1),
      controllers: z.array(controlMemberSchema),
    })
    .optional(),
});

/** The JSON shape accepted by `parseEvaluationState`. */
export type EvaluationStateJson = z.input<typeof evaluationStateSchema>;

/** Formats a zod issue path as `holders[2].claims[0].lane`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? String(p) : `.${String(p)}`;
  return out === "" ? "(root)" : out;
}

/**
 * Parses untrusted JSON against `schema`. Throws PolicyInputError naming the first bad field;
 * counts the rejection (by error code) in `counters` when given.
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, counters?: Counters): z.output<S> {
  const r = schema.safeParse(input);
  if (!r.success) {
    // A misspelled key shows up twice (unknown key, missing field): name the misspelling.
    const issue = reportedIssue(r.error.issues);
    const key = issue.path[issue.path.length - 1];
    const err = issue.unknownKey
      ? new PolicyInputError(
          fieldPath(issue.path.slice(0, -1)),
          issue.problem.replace(/^unknown key/, `unknown key ${JSON.stringify(String(key))}`),
        )
      : new PolicyInputError(fieldPath(issue.path), issue.problem);
    counters?.inc(err.code);
    throw err;
  }
  return r.data;
}

/**
 * Parses and validates the JSON form of an evaluation state into an EvaluationState (RangeSets,
 * cross-references checked). Throws PolicyInputError / UnknownReferenceError naming the field and
 * counts the rejection in `counters` when given.
 */
export function parseEvaluationState(input: unknown, counters?: Counters): EvaluationState {
  const j = parseWith(evaluationStateSchema, input, counters);
  const rs = (r: [number, number][]) => RangeSet.from(r);
  const state: EvaluationState = {
    ...j,
    holders: j.holders.map(({ coalesced, ...h }) => ({
      ...h,
      claims: h.claims.map((c) => ({ ...c, ranges: rs(c.ranges) })),
      ...(coalesced === undefined ? {} : { coalesced: coalesced.map((c) => ({ ...c, ranges: rs(c.ranges) })) }),
    })),
    forwards: j.forwards.map((f) => ({ ...f, ranges: rs(f.ranges) })),
    pins: j.pins.map((p) => ({ ...p, ranges: rs(p.ranges) })),
    recoveries: j.recoveries.map((r) => ({ ...r, ranges: rs(r.ranges) })),
  };
  try {
    validateEvaluationState(state);
  } catch (err) {
    if (err instanceof Error && "code" in err) counters?.inc(String((err as { code: unknown }).code));
    throw err;
  }
  return state;
}
