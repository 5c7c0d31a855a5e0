import { z } from "zod";
import { issueText, reportedIssue } from "../../core/index.ts";
import type { BootstrapPlan } from "./deployment-plan.ts";
import { DeploymentError } from "./deployment-schema.ts";

/** The `bootstrap.json` `custody init` writes, read back strictly by `custody bootstrap`. */
const bootstrapSchema = z.strictObject({
  controlRegion: z.string().min(1),
  /** Defaults: operator "operator", no controllers (an unsigned log). */
  operatorId: z.string().min(1).default("operator"),
  operatorPublicKey: z
    .string()
    .regex(/^[0-9a-f]{64}$/i)
    .optional(),
  /**
   * Each controller's `volumes`: what it may commit for (required: an unscoped controller could commit
   * for every volume).
   */
  controllers: z
    .array(
      z.strictObject({
        id: z.string().min(1),
        publicKey: z.string().regex(/^[0-9a-f]{64}$/i),
        volumes: z.array(z.string().min(1)).min(1),
      }),
    )
    .default([]),
  /** A holder's `volumes` (default: the volumes of the obligations that name it). */
  holders: z.array(
    z.strictObject({
      id: z.string().min(1),
      incarnation: z.literal(1),
      publicKey: z.string().regex(/^[0-9a-f]{64}$/i),
      failureDomain: z.string().min(1),
      volumes: z.array(z.string().min(1)).min(1).optional(),
    }),
  ),
  /** `representation` (default raw): `coalesced` for a coalesced stream's derived lane (issue #22). */
  obligations: z.array(
    z.strictObject({
      volume: z.string().min(1),
      lane: z.string().min(1),
      holders: z.array(z.string().min(1)).min(1),
      representation: z.enum(["raw", "coalesced"]).optional(),
    }),
  ),
  /** A replicated control log: its stream's replicas and the cluster it is placed on (absent: one replica). */
  controlStream: z.strictObject({ replicas: z.number().int().min(1).max(5), cluster: z.string().min(1) }).optional(),
});

/** Validates a parsed bootstrap file; throws DeploymentError naming the first bad key. */
export function parseBootstrap(raw: unknown): BootstrapPlan {
  const r = bootstrapSchema.safeParse(raw);
  if (r.success) return r.data;
  const issue = reportedIssue(r.error.issues);
  throw new DeploymentError(`invalid bootstrap file: ${issueText(issue)}`, { path: issue.path.join(".") });
}
