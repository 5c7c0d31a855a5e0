import { z } from "zod";
import { defineMessage } from "./codec.ts";
import * as wireFields from "./fields.ts";

/**
 * `writer-progress` v1 on `custody.v1.event.<volume>`: what the volume writer has acknowledged,
 * for the controller's RPO arithmetic. Per lane: the highest sequence handed to first-hop holders,
 * and commit runs (sequences with their source commit time and payload bytes). Progress is a
 * claim of what was WRITTEN, never of what is protected — only receipts prove that.
 */
export const writerProgressSpec = defineMessage({
  kind: "writer-progress",
  version: 1,
  schema: z.object({
    writer: wireFields.identifier,
    volume: wireFields.identifier,
    term: wireFields.uint,
    lanes: z
      .array(
        z.object({
          lane: wireFields.identifier,
          head: wireFields.uint,
          runs: z
            .array(
              z
                .tuple([wireFields.uint, wireFields.uint, wireFields.timestampMs, wireFields.uint])
                .refine(([first, last]) => first <= last, { message: "a run's first sequence exceeds its last" }),
            )
            .max(4096),
        }),
      )
      .max(256),
    at: wireFields.timestampMs,
  }),
  maxBytes: 512 * 1024,
});
export type WriterProgressMessage = z.infer<typeof writerProgressSpec.schema>;
