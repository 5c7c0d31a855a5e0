import { z } from "zod";

/**
 * The shape of a volume's `coalesced` section (see deployment-coalesced.ts), in a file of its own
 * because the deployment schema embeds it and the section's checks read the deployment's types.
 * The bounds (positive integers, a window of at least one block, free lane names) are the
 * writer's own (`checkCoalescedStream`).
 */
export const coalescedSectionSchema = z.strictObject({
  /** First hops of every derived lane: holders declared in `holders`, none a standby. */
  holders: z.array(z.string().min(1)).min(1),
  windowRecords: z.number(),
  windowMs: z.number().optional(),
  /** Derived lane = raw lane + this suffix (default `-coalesced`); it must stay a deployment id. */
  laneSuffix: z
    .string()
    .regex(/^[A-Za-z0-9_-]*$/, "letters, digits, '-' and '_' only")
    .optional(),
  maxWindowRecords: z.number().optional(),
  maxWindowBytes: z.number().optional(),
  windowsPerTick: z.number().optional(),
});
export type CoalescedSection = z.infer<typeof coalescedSectionSchema>;
