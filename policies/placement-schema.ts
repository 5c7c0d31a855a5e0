import { z } from "zod";
import type { Counters } from "../core/index.ts";
import type { PlacementInput } from "./placement.ts";
import { lossSchema, parseWith, siteSchema } from "./state-schema.ts";

const id = z
  .string()
  .min(1)
  .regex(/^[A-Za-z0-9_\-:.]+$/, "ids use letters, digits, _ - : .");
const nonNeg = z.number().nonnegative();
const charge = z.strictObject({ name: z.string().min(1), usdPerGB: nonNeg });

/** zod schema of the JSON accepted by `custody place` (see docs/policies.md). */
export const placementInputSchema = z.strictObject({
  source: z.strictObject({ site: id, sendBytesPerSec: z.number().positive() }),
  streamBytesPerSec: z.number().positive(),
  sites: z.array(siteSchema).min(1),
  candidates: z
    .array(
      z.strictObject({
        id,
        site: id,
        residency: z.enum(["ram", "protected_ram", "disk"]),
        holdsBase: z.boolean().default(false),
        retentionMs: nonNeg,
        sendBytesPerSec: z.number().positive(),
        drainBytesPerSec: nonNeg.default(0),
        monthlyUsd: nonNeg.default(0),
      }),
    )
    .min(1),
  edges: z.array(
    z.strictObject({
      from: id,
      to: id,
      rttMs: nonNeg,
      jitterMs: nonNeg.default(0),
      bandwidthBytesPerSec: z.number().positive(),
      charges: z.array(charge).default([]),
      deps: z.array(z.string()).default([]),
    }),
  ),
  contract: z.strictObject({
    maxHolders: z.number().int().min(1).max(10),
    days: z.number().positive().default(30),
    scenarios: z
      .array(
        z.strictObject({
          name: z.string().min(1),
          losses: z.array(lossSchema).min(1),
          maxLagMs: nonNeg,
          required: z.boolean().default(true),
          preceding: z.strictObject({ losses: z.array(lossSchema).min(1), intervalSec: nonNeg }).optional(),
        }),
      )
      .min(1),
  }),
});

/** The JSON shape accepted by `parsePlacementInput`. */
export type PlacementInputJson = z.input<typeof placementInputSchema>;

/** Parses untrusted placement JSON. Throws PolicyInputError naming the first bad field (counted in `counters`). */
export function parsePlacementInput(input: unknown, counters?: Counters): PlacementInput {
  return parseWith(placementInputSchema, input, counters);
}
