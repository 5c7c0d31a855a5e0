import { z } from "zod";
import { defineMessage } from "./codec.ts";
import * as wireFields from "./fields.ts";

/** Most lanes one manifest names (a volume's lanes; the receipt's 256-entry cut list bounds it too). */
export const MANIFEST_MAX_LANES = 64;

/**
 * `lane-manifest` v1 on a lane's unit subject (`custody.v1.unit.<toHolder>.<volume>.<lane>`): a
 * consistency manifest of a volume whose writes span lanes — the lane heads that together are the
 * volume at one LSN. The writer sends it to the first hops of every lane it names, each holder
 * forwards it to its edges of that lane, and a holder keeps it while it retains that lane's
 * sequence of the cut (docs/wire.md#lane-manifest-v1). It is not a unit: no credit, no receipt of
 * its own; holders list the manifests they keep in their receipts' `consistencyCuts`.
 */
export const laneManifestSpec = defineMessage({
  kind: "lane-manifest",
  version: 1,
  schema: z
    .object({
      writer: wireFields.identifier,
      volume: wireFields.identifier,
      term: wireFields.uint,
      lsn: wireFields.uint,
      cut: z
        .array(z.tuple([wireFields.identifier, wireFields.uint]))
        .min(2)
        .max(MANIFEST_MAX_LANES),
    })
    .superRefine((m, ctx) => {
      for (let i = 1; i < m.cut.length; i++) {
        if (m.cut[i]![0] <= m.cut[i - 1]![0])
          return void ctx.addIssue({
            code: "custom",
            path: ["cut", i],
            message: "lanes must be listed once each, in ascending order",
          });
      }
    }),
  maxBytes: 16 * 1024,
});
/** A `lane-manifest` body. */
export type LaneManifestMessage = z.infer<typeof laneManifestSpec.schema>;
